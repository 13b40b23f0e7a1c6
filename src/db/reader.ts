// The read connection of a file-backed SQLite database, and the rows it keeps.
// - Reads outside a transaction run on the writer connection while it is between transactions (its
//   page cache stays warm across its own commits), else on a read-only better-sqlite3 connection:
//   WAL lets that one read beside a running write, and it sees every committed write.
// - A statement with the same parameters reads the same row until something commits to the main
//   file (the audit trail has its own), so the row is kept: a GET no longer reads its credential
//   and its record every time. `PRAGMA data_version` says when anything was committed, by this
//   process or another (the admin CLI revoking a credential).
// - Rows of the credentials and accounts tables (authentication, on every request) are kept
//   across this process's own commits that did not write those tables: a POST commits, and
//   reading the credential again after every commit cost ~30-90 us (the read connection's page
//   cache is dropped). This process's writes to them are seen on the writer connection itself
//   (trackWrites); another process's commits change the writer's data_version.
import Database from 'better-sqlite3';
import { Checkpointer } from './checkpoint.ts';
import type { Db } from './engine.ts';
import { valueBlind } from './sqlite-statements.ts';

/** The tables whose rows `stable` reads may keep across this process's other commits. */
const STABLE = /\b(credentials|accounts)\b/i;
/** A deferred transaction (knex's own `BEGIN;`), not the group committer's BEGIN IMMEDIATE. */
const DEFERRED_BEGIN = /^\s*BEGIN(\s+DEFERRED)?(\s+TRANSACTION)?\s*;?\s*$/i;

interface ReadConnection {
  conn: Database.Database;
  statements: Map<string, Database.Statement>;
  checkpointers: Checkpointer[];
  /** `PRAGMA data_version`: changes when another connection commits to the main file. */
  version: Database.Statement;
  /** Rows read at `seen`, by statement and parameters. */
  rows: Map<string, unknown>;
  seen: unknown;
  /** Rows of stable reads, valid while `stableSeen` is `stableWrites`. */
  stableRows: Map<string, unknown>;
  stableSeen: number;
  /** Bumped by every write of this process to a stable table (when it runs, and at its commit). */
  stableWrites: number;
  writeOpen: boolean;
  /** The writer connection, and its data_version: only other connections' commits move it. */
  writer: Database.Database | null;
  writerStatements: Map<string, Database.Statement>;
  writerVersion: Database.Statement | null;
  writerSeen: unknown;
  /** data_version was read in this event-loop turn, and this process wrote nothing since. */
  fresh: boolean;
  /** The writer's data_version was read in this turn (this process's commits never move it). */
  writerFresh: boolean;
  /**
   * The writer's open transaction began deferred: its snapshot freezes the writer's
   * data_version, so another process's commit cannot be seen there until it ends.
   */
  deferred: boolean;
}

/** The read connection's page cache: 2,000 KiB (negative: SQLite counts KiB). */
const READ_CACHE_KIB = -2000;

/** Past this many remembered rows, they are all forgotten (a crude bound, rarely reached). */
const MAX_CACHED_ROWS = 10_000;

const readers = new WeakMap<object, ReadConnection>();

/**
 * Gives a file-backed SQLite database its side connections (createDb calls this once the writer
 * has WAL on): the read connection to the main file, and one checkpointer for every file (the main
 * one, then the attached ones) that replaces the writer's automatic checkpoints.
 */
export function attachSideConnections(
  db: Db,
  files: [main: string, ...others: string[]],
  onCheckpointerFailure: (err: unknown) => void,
): void {
  const conn = new Database(files[0], { readonly: true, fileMustExist: false });
  conn.pragma('busy_timeout = 5000');
  // Its page cache lasts until the writer's next commit (see readCached), so better-sqlite3's 16
  // MiB could only fill with one long read's pages, never read again: 2 MiB, as a snapshot's.
  conn.pragma(`cache_size = ${READ_CACHE_KIB}`);
  const checkpointers = [new Checkpointer(files, onCheckpointerFailure)];
  const reader: ReadConnection = {
    conn,
    statements: new Map(),
    checkpointers,
    version: conn.prepare('PRAGMA data_version').pluck(),
    rows: new Map(),
    seen: null,
    stableRows: new Map(),
    stableSeen: -1,
    stableWrites: 0,
    writeOpen: false,
    writer: null,
    writerStatements: new Map(),
    writerVersion: null,
    writerSeen: null,
    fresh: false,
    writerFresh: false,
    deferred: false,
  };
  readers.set(db, reader);
  // Every write of this process, in a transaction or not, holds the writer connection and is
  // committed (or rolled back) before the connection goes back to the pool.
  const client = db.client as any;
  const release = client.releaseConnection.bind(client);
  client.releaseConnection = (c: unknown) => {
    reader.fresh = false;
    if (reader.writeOpen) {
      reader.writeOpen = false;
      reader.stableWrites++;
    }
    return release(c);
  };
}

export const hasSideConnections = (db: Db): boolean => readers.has(db);

/**
 * The writer connection (each one the pool creates): its statements that name a stable table and
 * may write (not `readonly`) mark a stable write when they run, so a row read before it commits
 * is not kept past the commit; a deferred BEGIN is noted (see `deferred`).
 */
export function trackWrites(db: Db, writer: Database.Database): void {
  const reader = readers.get(db);
  if (!reader) return;
  reader.writer = writer;
  reader.writerStatements = new Map();
  reader.writerVersion = writer.prepare('PRAGMA data_version').pluck();
  reader.writerSeen = null;
  reader.writerFresh = false;
  const mark = () => {
    reader.stableWrites++;
    reader.writeOpen = true;
    reader.fresh = false;
  };
  const prepare = writer.prepare.bind(writer);
  (writer as any).prepare = (sql: string) => {
    const stmt = prepare(sql);
    if (DEFERRED_BEGIN.test(sql)) {
      const run = stmt.run.bind(stmt);
      (stmt as any).run = (...args: unknown[]) => {
        reader.deferred = true;
        return run(...args);
      };
      return stmt;
    }
    // `readonly` (SQLite's own answer): SELECT and WITH ... SELECT, not INSERT ... RETURNING.
    if (!STABLE.test(sql) || stmt.readonly) return stmt;
    for (const method of ['run', 'get', 'all', 'iterate'] as const) {
      const fn = (stmt as any)[method].bind(stmt);
      (stmt as any)[method] = (...args: unknown[]) => {
        mark();
        return fn(...args);
      };
    }
    return stmt;
  };
  const exec = writer.exec.bind(writer);
  (writer as any).exec = (sql: string) => {
    if (STABLE.test(sql)) mark();
    return exec(sql);
  };
}

/**
 * Closes them, after db.destroy(): the checkpointer's connection is then the last one, so its
 * close makes the final checkpoint, and its handle on -shm is closed when no connection of this
 * process holds a lock there (see src/db/checkpoint.ts).
 */
export async function closeSideConnections(db: Db): Promise<void> {
  const side = readers.get(db);
  if (!side) return;
  readers.delete(db);
  side.conn.close();
  await Promise.all(side.checkpointers.map((c) => c.close()));
}

/**
 * The data_version pragmas open a read transaction each (file locks: ~3 us), so they run once per
 * event-loop turn: the reads of one turn see the database as its first read saw it, unless this
 * process wrote in between. Another process's commit is seen from the next turn on.
 */
function checkVersions(reader: ReadConnection): boolean {
  if (!reader.fresh) {
    const version = reader.version.get();
    if (version !== reader.seen) {
      reader.rows.clear();
      reader.seen = version;
    }
    reader.fresh = true;
    setImmediate(() => (reader.fresh = false));
  }
  const writer = reader.writer;
  if (writer && !writer.inTransaction) reader.deferred = false;
  // Inside a deferred transaction the writer cannot tell (see `deferred`): stable rows are not
  // trusted until it ends. BEGIN IMMEDIATE holds the write lock: no other process commits then.
  if (writer?.inTransaction && reader.deferred) {
    reader.stableRows.clear();
    reader.writerSeen = null;
    return false;
  }
  if (!reader.writerFresh) {
    const writerVersion = writer && writer.open ? reader.writerVersion!.get() : null;
    if (writerVersion === null || writerVersion !== reader.writerSeen) {
      reader.stableRows.clear();
      reader.writerSeen = writerVersion;
    }
    reader.writerFresh = true;
    setImmediate(() => (reader.writerFresh = false));
  }
  return true;
}

/**
 * The first row of a SELECT on the read connection, or `undefined` (the row read) when `db` has
 * none (PostgreSQL, `:memory:`, or inside a transaction): the caller reads elsewhere then.
 * `stable`: the statement reads nothing but the credentials and accounts tables.
 */
export function readCached(
  db: object,
  sql: string,
  params: readonly unknown[],
  stable: boolean,
): { row: unknown } | undefined {
  const reader = readers.get(db);
  if (!reader) return undefined;
  const stableTrusted = checkVersions(reader);
  let rows = reader.rows;
  if (stable && stableTrusted && reader.writerVersion) {
    // Written by this process since those rows were read: forget them.
    if (reader.stableSeen !== reader.stableWrites) {
      reader.stableRows.clear();
      reader.stableSeen = reader.stableWrites;
    }
    rows = reader.stableRows;
  }
  const cacheKey = sql + '\u0000' + JSON.stringify(params);
  if (rows.has(cacheKey)) return { row: rows.get(cacheKey) };
  // Between transactions the writer reads committed rows as the read connection does, from a page
  // cache its own commits leave warm; the read connection drops its whole cache after every commit
  // of the writer, and its next read cost 15-90 us instead of 2-5.
  const writer = reader.writer;
  const onWriter = writer !== null && writer.open && !writer.inTransaction;
  const conn = onWriter ? writer : reader.conn;
  const statements = onWriter ? reader.writerStatements : reader.statements;
  let stmt = statements.get(sql);
  if (!stmt) {
    stmt = conn.prepare(valueBlind(sql));
    statements.set(sql, stmt);
  }
  const row = stmt.get(...(params as unknown[]));
  if (rows.size >= MAX_CACHED_ROWS) rows.clear();
  // Shared by every caller: frozen, so none can change what the next one gets.
  const kept = row === undefined ? undefined : Object.freeze(row);
  rows.set(cacheKey, kept);
  return { row: kept };
}
