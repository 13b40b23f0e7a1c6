// Migrations are TypeScript modules listed here, so they run the same under node and in tests.
import type { Knex } from 'knex';
import { isPostgres, type Db } from './knex.ts';
import { useIncrementalVacuum } from './vacuum.ts';
import * as m001 from './migrations/001_foundation.ts';
import * as m002 from './migrations/002_oauth.ts';
import * as m003 from './migrations/003_idempotency_sweep_index.ts';
import * as m004 from './migrations/004_sealed_totp.ts';
import * as m005 from './migrations/005_audit_file.ts';
import * as m006 from './migrations/006_tag_name_lower.ts';
import * as m007 from './migrations/007_jobs_operations.ts';
import * as m008 from './migrations/008_catalog.ts';
import * as m009 from './migrations/009_events_webhooks.ts';
import * as m010 from './migrations/010_streams_automations.ts';
import * as m011 from './migrations/011_sales.ts';
import * as m012 from './migrations/012_legacy_lookups.ts';
import * as m013 from './migrations/013_hot_path_indexes.ts';
import * as m014 from './migrations/014_hardening.ts';
import * as m015 from './migrations/015_files.ts';
import * as m016 from './migrations/016_settings.ts';
import * as m017 from './migrations/017_imports_exports.ts';
import * as m018 from './migrations/018_auth_version.ts';
import * as m019 from './migrations/019_plans.ts';
import * as m021 from './migrations/021_upload_joined.ts';
import * as m022 from './migrations/022_audit_account_index.ts';
import * as m023 from './migrations/023_auth_version_order.ts';
import * as m025 from './migrations/025_lease_takeovers.ts';
import * as m026 from './migrations/026_jobs_task_index.ts';
import * as m028 from './migrations/028_webhook_claims.ts';
import * as m032 from './migrations/032_idempotency_claim.ts';

const migrations: Record<string, Knex.Migration> = {
  '001_foundation': m001,
  '002_oauth': m002,
  '003_idempotency_sweep_index': m003,
  '004_sealed_totp': m004,
  '005_audit_file': m005,
  '006_tag_name_lower': m006,
  '007_jobs_operations': m007,
  '008_catalog': m008,
  '009_events_webhooks': m009,
  '010_streams_automations': m010,
  '011_sales': m011,
  '012_legacy_lookups': m012,
  '013_hot_path_indexes': m013,
  '014_hardening': m014,
  '015_files': m015,
  '016_settings': m016,
  '017_imports_exports': m017,
  '018_auth_version': m018,
  '019_plans': m019,
  '021_upload_joined': m021,
  '022_audit_account_index': m022,
  '023_auth_version_order': m023,
  '025_lease_takeovers': m025,
  '026_jobs_task_index': m026,
  '028_webhook_claims': m028,
  '032_idempotency_claim': m032,
};

const source: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};

export async function migrate(db: Db): Promise<void> {
  if (!isPostgres(db)) {
    // knex's migrator reads its lock row and then writes it in one deferred transaction: while
    // another process (the server, beside an admin command) commits in between, SQLite answers
    // "database is locked" at once, without waiting. Up to date, the common case, is read only.
    if (!(await upToDate(db))) await db.migrate.latest({ migrationSource: source });
    await useIncrementalVacuum(db);
    return;
  }
  // Several instances start together on one PostgreSQL database. knex's own lock is a row that a
  // second migrator finds taken and fails on (it does not wait), and two of them creating knex's
  // tables at once collide. A transaction-scoped advisory lock per schema makes the others wait;
  // they then find nothing left to run.
  await db.transaction(async (trx) => {
    await trx.raw("SELECT pg_advisory_xact_lock(hashtext('school:migrate:' || current_schema()))");
    await db.migrate.latest({ migrationSource: source });
  });
}

/** Whether every migration this code knows is applied (false too when knex's table is missing). */
async function upToDate(db: Db): Promise<boolean> {
  if (!(await db.schema.hasTable('knex_migrations'))) return false;
  return (await pendingMigrations(db)).length === 0;
}

/** Migrations this code knows, for the readiness check (src/http/health.ts). */
export const migrationNames = (): string[] => Object.keys(migrations).sort();

/** The migrations this release knows that the database has not applied (readiness checks). */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const applied = new Set(
    ((await db('knex_migrations').select('name')) as { name: string }[]).map((r) => r.name),
  );
  return migrationNames().filter((n) => !applied.has(n));
}
