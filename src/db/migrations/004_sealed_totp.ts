// Administrators' TOTP secrets are stored sealed with SECRETS_KEY (src/secrets-key.ts), longer than
// the 64 characters of a clear one. SQLite does not enforce varchar lengths; PostgreSQL does.
// Rows written before stay readable in clear (see Sessions.find).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.schema.alterTable('administrators', (t) => {
    t.text('totp_secret').notNullable().alter();
  });
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.schema.alterTable('administrators', (t) => {
    t.string('totp_secret', 64).notNullable().alter();
  });
}
