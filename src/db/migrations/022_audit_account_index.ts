// GET /requests (and `school logs tail`) reads an account's audit entries newest first: an index
// on (account_id, id) keeps that a range scan of the account's own entries. SQLite keeps the
// table in the attached audit file (005_audit_file), so the index is created there.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') {
    await knex.schema.alterTable('audit_entries', (t) => t.index(['account_id', 'id']));
    return;
  }
  await knex.raw(
    'CREATE INDEX IF NOT EXISTS audit.audit_entries_account_id_id_index ON audit_entries (account_id, id)',
  );
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg')
    await knex.schema.alterTable('audit_entries', (t) => t.dropIndex(['account_id', 'id']));
  else await knex.raw('DROP INDEX IF EXISTS audit.audit_entries_account_id_id_index');
}
