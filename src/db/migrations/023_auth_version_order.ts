// PostgreSQL: every statement that changes an account or a credential takes the auth-version row
// (migration 018) first, before the rows it changes. The version row moves at the end of such a
// statement, after its row is locked; a transaction that changed one auth row and then wanted a
// second, locked by another transaction already waiting for the version row, deadlocked (and two
// transactions changing accounts and credentials in opposite order always could). Taken first,
// the version row orders every such writer: the second waits before it locks anything.
// A credential's last_used_at alone (the per-minute touch) neither moves the version nor waits.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  const { rows } = await knex.raw('SELECT current_schema() AS s');
  const schema = String(rows[0].s);
  const table = `"${schema.replace(/"/g, '""')}".auth_version`;
  // Every column but last_used_at: UPDATE OF fires when one of them is in the SET list.
  const columns = (
    await knex.raw(
      `SELECT column_name FROM information_schema.columns
        WHERE table_schema = ? AND table_name = 'credentials' AND column_name <> 'last_used_at'
        ORDER BY ordinal_position`,
      [schema],
    )
  ).rows.map((r: { column_name: string }) => `"${r.column_name}"`);
  await knex.raw(`
    CREATE FUNCTION lock_auth_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM 1 FROM ${table} WHERE id = 1 FOR UPDATE;
      RETURN NULL;
    END $$;
    CREATE TRIGGER credentials_auth_version_first
      BEFORE UPDATE OF ${columns.join(', ')} OR DELETE ON credentials
      FOR EACH STATEMENT EXECUTE FUNCTION lock_auth_version();
    CREATE TRIGGER accounts_auth_version_first BEFORE UPDATE OR DELETE ON accounts
      FOR EACH STATEMENT EXECUTE FUNCTION lock_auth_version();
  `);
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw(`
    DROP TRIGGER IF EXISTS credentials_auth_version_first ON credentials;
    DROP TRIGGER IF EXISTS accounts_auth_version_first ON accounts;
    DROP FUNCTION IF EXISTS lock_auth_version();
  `);
}
