// Knex factory: SQLite (better-sqlite3, WAL) by default, PostgreSQL when DATABASE_URL is postgres://.
// Dialect differences stay in src/db/.
import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { useSessionUrl } from './pg-connection.ts';
import { foldTransactionEnds } from './pg-pipeline.ts';
import { attachSideConnections, hasSideConnections, trackWrites } from './reader.ts';

export { isPostgres, type Db, type Tx } from './engine.ts';
import type { Db } from './engine.ts';
import { CachingSqliteClient } from './sqlite-statements.ts';

/** The writer connection's page cache for the main file, in KiB (negative: SQLite counts KiB). */
const WRITER_CACHE_KIB = -8000;

export interface DbOptions {
  /** PostgreSQL only: use this schema (tests give each suite its own). */
  schema?: string;
  /** PostgreSQL only: the pool's connections (DATABASE_POOL_MAX, default 10). */
  poolMax?: number;
  /** PostgreSQL only: where session connections go (DATABASE_SESSION_URL), when `url` is a pooler. */
  sessionUrl?: string;
}

export function isPostgresUrl(url: string): boolean {
  return url.startsWith('postgres://') || url.startsWith('postgresql://');
}

// knex prints its warnings with console.log; keep stdout for the server's own output.
export const knexLog = {
  // A failed connection attempt is also thrown to whoever asked for the connection, which says it
  // once (start-up: one line; a request: 503 and its log line); knex's copy is a stack trace.
  warn: (m: unknown) =>
    String(m).startsWith('Acquire connection error') ||
    process.stderr.write(`knex: ${String(m)}\n`),
  deprecate: (m: unknown) => process.stderr.write(`knex: ${String(m)}\n`),
  debug: () => undefined,
  error: (m: unknown) => process.stderr.write(`knex: ${String(m)}\n`),
};

export function createDb(url: string, options: DbOptions = {}): Db {
  if (isPostgresUrl(url)) {
    const db = knexFactory({
      client: 'pg',
      log: knexLog,
      connection: url,
      searchPath: options.schema ? [options.schema] : undefined,
      pool: {
        min: 0,
        max: options.poolMax ?? 10,
        afterCreate: (conn: any, done: (err: Error | null, conn: unknown) => void) => {
          // BEGIN and COMMIT ride with a statement (src/db/pg-pipeline.ts), not behind a pooler.
          if (!options.sessionUrl) foldTransactionEnds(conn);
          const sql = options.schema ? `SET search_path TO "${options.schema}"` : 'SELECT 1';
          conn.query(sql, (err: Error | null) => done(err, conn));
        },
      },
    });
    if (options.sessionUrl) useSessionUrl(db, options.sessionUrl);
    return db;
  }
  if (!url.startsWith('sqlite:')) throw new Error(`Unsupported DATABASE_URL: ${url}`);
  const filename = url.slice('sqlite:'.length);
  if (filename !== ':memory:')
    fs.mkdirSync(path.dirname(path.resolve(filename)), { recursive: true });
  // While the checkpointer runs, the writer leaves checkpoints to it (src/db/checkpoint.ts); if it
  // dies, the current writer connection (the pool may have replaced it) checkpoints again.
  let checkpointer: 'running' | 'failed' = 'running';
  let writer: any = null;
  const db = knexFactory({
    client: CachingSqliteClient as any,
    log: knexLog,
    // An error names its statement, not the values bound to it (personal data, secrets' hashes)
    // that knex would write into its `?`s and so into the logs. On PostgreSQL knex's text has `$n`
    // placeholders, which it leaves as they are, and the portable statements word theirs the same.
    compileSqlOnError: false,
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: any, done: (err: Error | null, conn: unknown) => void) => {
        try {
          // First: what follows may wait for another process's write (the server, when the
          // admin CLI opens its file), and without it SQLite fails at once ('database is locked').
          conn.pragma('busy_timeout = 5000');
          // Takes effect only in a file without tables yet (older files are converted once at
          // migration, src/db/vacuum.ts), and setting it writes: so only there.
          const empty = (schema: string) =>
            conn.prepare(`SELECT count(*) AS n FROM ${schema}.sqlite_master`).get().n === 0;
          if (empty('main')) conn.pragma('auto_vacuum = INCREMENTAL');
          conn.pragma('journal_mode = WAL');
          conn.pragma('synchronous = NORMAL');
          conn.pragma('foreign_keys = ON');
          // The audit trail's own file (migration 005 says why).
          conn.prepare('ATTACH DATABASE ? AS audit').run(auditFilename(filename));
          if (empty('audit')) conn.pragma('audit.auto_vacuum = INCREMENTAL');
          conn.pragma('audit.journal_mode = WAL');
          conn.pragma('audit.synchronous = NORMAL');
          if (filename !== ':memory:') {
            writer = conn;
            // The main file's page cache: 8 MiB, not better-sqlite3's 16 (its build sets
            // SQLITE_DEFAULT_CACHE_SIZE=-16000). A 100,000-row import fills whichever bound it is
            // given: the 16 were a quarter of its peak RSS growth over a 1,000-row run. With 8 the
            // import and the export took the same CPU, and 667 v1 pages over 100,000 students the
            // same time, within this machine's noise (docs/speed.md, "Flat memory for the SQLite
            // import"). The audit trail's attached file keeps 16.
            conn.pragma(`cache_size = ${WRITER_CACHE_KIB}`);
            conn.pragma(`wal_autocheckpoint = ${checkpointer === 'running' ? 0 : 1000}`);
            // They need the file to exist with WAL on, so they open after this connection.
            if (!hasSideConnections(db)) {
              const main = path.resolve(filename);
              attachSideConnections(db, [main, auditFilename(main)], (err) => {
                knexLog.warn(`checkpointer stopped (${String(err)}); the writer checkpoints again`);
                checkpointer = 'failed';
                if (writer?.open) writer.pragma('wal_autocheckpoint = 1000');
              });
            }
            trackWrites(db, conn);
          }
          done(null, conn);
        } catch (err) {
          done(err as Error, conn);
        }
      },
    },
  });
  return db;
}

/** SQLite: `data/school.db` keeps its audit trail in `data/school.audit.db`. */
export function auditFilename(filename: string): string {
  if (filename === ':memory:') return ':memory:';
  const ext = path.extname(filename);
  return filename.slice(0, filename.length - ext.length) + '.audit' + ext;
}
