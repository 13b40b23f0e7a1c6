// A tag name of up to 100 characters can lower-case to 200: `İ` (U+0130) becomes `i` plus a
// combining dot. On PostgreSQL the lower-cased copy overflowed varchar(100) and answered 500.
// SQLite does not enforce varchar lengths, so only PostgreSQL changes.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw('ALTER TABLE tags ALTER COLUMN name_lower TYPE varchar(200)');
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw('ALTER TABLE tags ALTER COLUMN name_lower TYPE varchar(100)');
}
