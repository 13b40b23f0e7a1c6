// Migrations are TypeScript modules listed here, so they run the same under tsx and in tests.
import type { Knex } from 'knex';
import type { Db } from './knex.ts';
import * as m001 from './migrations/001_foundation.ts';
import * as m002 from './migrations/002_oauth.ts';
import * as m003 from './migrations/003_idempotency_sweep_index.ts';
import * as m004 from './migrations/004_sealed_totp.ts';
import * as m005 from './migrations/005_audit_file.ts';
import * as m006 from './migrations/006_tag_name_lower.ts';
import * as m007 from './migrations/007_jobs_operations.ts';
import * as m008 from './migrations/008_catalog.ts';

const migrations: Record<string, Knex.Migration> = {
  '001_foundation': m001,
  '002_oauth': m002,
  '003_idempotency_sweep_index': m003,
  '004_sealed_totp': m004,
  '005_audit_file': m005,
  '006_tag_name_lower': m006,
  '007_jobs_operations': m007,
  '008_catalog': m008,
};

const source: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};

export async function migrate(db: Db): Promise<void> {
  await db.migrate.latest({ migrationSource: source });
}
