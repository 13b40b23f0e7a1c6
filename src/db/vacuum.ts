// SQLite keeps the pages that deletes free inside its file (the freelist) unless the file is in
// auto_vacuum mode. In INCREMENTAL mode the file shrinks when asked (`PRAGMA incremental_vacuum`),
// which the retention sweep does after deleting (src/tasks/sweep-audit.ts), so disk use stays
// flat. Both files: the main one and the audit trail's (`audit`, see src/db/knex.ts).
// PostgreSQL: autovacuum makes deleted rows' space reusable; nothing to do here.
import type Database from 'better-sqlite3';
import { isPostgres, type Db } from './engine.ts';

const SCHEMAS = ['main', 'audit'] as const;
const INCREMENTAL = 2;
/** Pages given back per step (8 MiB of 4 KiB pages): requests run between steps. */
const STEP_PAGES = 2048;

/** Runs fn on the writer connection, serialized with every other use of it (knex's pool of one). */
async function onWriter<T>(db: Db, fn: (conn: Database.Database) => T): Promise<T> {
  const client = db.client as any;
  const conn = (await client.acquireConnection()) as Database.Database;
  try {
    return fn(conn);
  } finally {
    await client.releaseConnection(conn);
  }
}

/**
 * Puts both files in INCREMENTAL mode. A file created here is already (src/db/knex.ts sets the
 * mode before any table exists); an older file is rewritten once by VACUUM, which takes time in
 * proportion to its size and needs as much free disk again while it runs.
 */
export async function useIncrementalVacuum(db: Db): Promise<void> {
  if (isPostgres(db)) return;
  await onWriter(db, (conn) => {
    for (const schema of SCHEMAS) {
      if (conn.pragma(`${schema}.auto_vacuum`, { simple: true }) === INCREMENTAL) continue;
      conn.pragma(`${schema}.auto_vacuum = INCREMENTAL`);
      conn.exec(`VACUUM ${schema}`);
    }
  });
}

/**
 * Gives the free pages of both files back to the file system, a step at a time so requests are
 * not held up behind one long run. Returns the number of pages given back.
 */
export async function reclaimFreePages(db: Db): Promise<number> {
  if (isPostgres(db)) return 0;
  let total = 0;
  for (const schema of SCHEMAS) {
    for (;;) {
      // exec, not a prepared statement's run(): each step of the statement frees one page only.
      const freed = await onWriter(db, (conn) => {
        if (conn.pragma(`${schema}.auto_vacuum`, { simple: true }) !== INCREMENTAL) return 0;
        const before = conn.pragma(`${schema}.freelist_count`, { simple: true }) as number;
        if (before === 0) return 0;
        conn.exec(`PRAGMA ${schema}.incremental_vacuum(${STEP_PAGES})`);
        return before - (conn.pragma(`${schema}.freelist_count`, { simple: true }) as number);
      });
      if (freed <= 0) break;
      total += freed;
    }
  }
  return total;
}
