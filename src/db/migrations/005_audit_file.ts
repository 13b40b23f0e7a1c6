// SQLite keeps the audit trail in a file of its own, attached to the writer as `audit` (see
// auditFilename in src/db/knex.ts). Every v3 call appends an entry; in the main file each of those
// commits changed the database, so nothing read from it could be kept between requests (see
// firstRow in src/db/statements.ts). Unqualified `audit_entries` resolves to the attached table
// once the main one is gone. Each step is idempotent: a transaction across attached WAL files is
// not atomic, so a run cut short is simply run again. PostgreSQL keeps the table where it is.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  await knex.raw(
    'CREATE TABLE IF NOT EXISTS audit.audit_entries (' +
      'id integer PRIMARY KEY AUTOINCREMENT NOT NULL, request_id varchar(64) NOT NULL, ' +
      'account_id integer, credential_id integer, admin_id integer, method varchar(10) NOT NULL, ' +
      'route varchar(300), operation_id varchar(100), path varchar(2000) NOT NULL, ' +
      'status integer NOT NULL, duration_ms integer NOT NULL, ip varchar(64), ' +
      'created_at varchar(30) NOT NULL)',
  );
  await knex.raw(
    'CREATE UNIQUE INDEX IF NOT EXISTS audit.audit_entries_request_id_unique ON audit_entries (request_id)',
  );
  await knex.raw(
    'CREATE INDEX IF NOT EXISTS audit.audit_entries_credential_id_index ON audit_entries (credential_id)',
  );
  const old = await knex.raw(
    "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'audit_entries'",
  );
  if (old.length) {
    await knex.raw('INSERT OR IGNORE INTO audit.audit_entries SELECT * FROM main.audit_entries');
    await knex.raw('DROP TABLE main.audit_entries');
  }
}

// Down: the entries stay in the audit file (nothing here ever runs migrations down).
export async function down(): Promise<void> {}
