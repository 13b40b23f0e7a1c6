// Hot-path statements. knex recompiles every statement on every call (about 80-150 us per query on
// SQLite); cached prepared statements run the same SQL in a few microseconds.
// - Reads outside a transaction use a read-only better-sqlite3 connection: WAL lets it read beside
//   knex's writer, and it sees every committed write. Its rows are kept until the next commit to
//   the main file (see firstRow).
// - Everything else runs on the connection knex itself hands out (the transaction's connection
//   inside one), taken and released through knex's pool, so it stays serialized with knex queries.
// - On PostgreSQL the same portable `?` SQL goes through knex.
import Database from 'better-sqlite3';
import { Checkpointer } from './checkpoint.ts';
import { isPostgres, type Db, type Tx } from './engine.ts';

interface ReadConnection {
  conn: Database.Database;
  statements: Map<string, Database.Statement>;
  checkpointers: Checkpointer[];
  /** `PRAGMA data_version`: changes when another connection commits to the main file. */
  version: Database.Statement;
  /** Rows read at `seen`, by statement and parameters. */
  rows: Map<string, unknown>;
  seen: unknown;
}

/** Past this many remembered rows, they are all forgotten (a crude bound, rarely reached). */
const MAX_CACHED_ROWS = 10_000;

const readers = new WeakMap<object, ReadConnection>();

/**
 * Gives a file-backed SQLite database its side connections (createDb calls this once the writer
 * has WAL on): the read connection to the main file, and for each file (the main one, then the
 * attached ones) a checkpointer that replaces the writer's automatic checkpoints.
 */
export function attachSideConnections(
  db: Db,
  files: [main: string, ...others: string[]],
  onCheckpointerFailure: (err: unknown) => void,
): void {
  const conn = new Database(files[0], { readonly: true, fileMustExist: false });
  conn.pragma('busy_timeout = 5000');
  const checkpointers = files.map((file) => new Checkpointer(file, onCheckpointerFailure));
  const version = conn.prepare('PRAGMA data_version').pluck();
  readers.set(db, {
    conn,
    statements: new Map(),
    checkpointers,
    version,
    rows: new Map(),
    seen: null,
  });
}

export const hasSideConnections = (db: Db): boolean => readers.has(db);

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

/** First row of a portable `?`-parameterized SELECT, or undefined. */
export async function firstRow<T = Record<string, unknown>>(
  tx: Tx,
  sql: string,
  params: readonly unknown[],
): Promise<T | undefined> {
  const reader = readers.get(tx);
  if (reader) {
    // Outside any transaction: the read connection. Until something commits to the main file
    // (the audit trail has its own), a statement with the same parameters reads the same row, so
    // the row is kept: a GET no longer reads its credential and its record every time. Another
    // process's commit (the admin CLI revoking a credential) changes data_version too.
    const version = reader.version.get();
    if (version !== reader.seen) {
      reader.rows.clear();
      reader.seen = version;
    }
    const cacheKey = sql + '\u0000' + JSON.stringify(params);
    if (reader.rows.has(cacheKey)) return reader.rows.get(cacheKey) as T | undefined;
    let stmt = reader.statements.get(sql);
    if (!stmt) {
      stmt = reader.conn.prepare(sql);
      reader.statements.set(sql, stmt);
    }
    const row = stmt.get(...(params as unknown[])) as T | undefined;
    if (reader.rows.size >= MAX_CACHED_ROWS) reader.rows.clear();
    // Shared by every caller: frozen, so none can change what the next one gets.
    reader.rows.set(cacheKey, row === undefined ? undefined : Object.freeze(row));
    return row;
  }
  if (!isPostgres(tx)) {
    return onConnection(
      tx,
      (conn) => statement(conn, sql).get(...sqliteParams(params)) as T | undefined,
    );
  }
  const result = await tx.raw(sql, params as any[]);
  return result.rows[0] as T | undefined;
}

/** Runs a portable `?`-parameterized write; returns the number of rows changed. */
export async function execute(tx: Tx, sql: string, params: readonly unknown[]): Promise<number> {
  if (isPostgres(tx)) {
    const result = await tx.raw(sql, params as any[]);
    return Number(result.rowCount ?? 0);
  }
  return onConnection(tx, (conn) => statement(conn, sql).run(...sqliteParams(params)).changes);
}

/** SQLite only: runs one write per row, atomically (a savepoint inside an open transaction). */
export async function executeEach(tx: Tx, sql: string, rows: readonly (readonly unknown[])[]) {
  await onConnection(tx, (conn) => {
    const stmt = statement(conn, sql);
    conn.transaction(() => {
      for (const row of rows) stmt.run(...sqliteParams(row));
    })();
  });
}

const writerStatements = new WeakMap<Database.Database, Map<string, Database.Statement>>();

export function statement(conn: Database.Database, sql: string): Database.Statement {
  let cache = writerStatements.get(conn);
  if (!cache) writerStatements.set(conn, (cache = new Map()));
  let stmt = cache.get(sql);
  if (!stmt) cache.set(sql, (stmt = conn.prepare(sql)));
  return stmt;
}

async function onConnection<T>(tx: Tx, fn: (conn: Database.Database) => T): Promise<T> {
  // Inside a knex transaction this is the transaction's own connection, and release is a no-op.
  const client = tx.client as any;
  const conn = (await client.acquireConnection()) as Database.Database;
  try {
    return fn(conn);
  } finally {
    await client.releaseConnection(conn);
  }
}

/** better-sqlite3 binds no booleans; knex stores them as 0/1 too. */
const sqliteParams = (params: readonly unknown[]): unknown[] =>
  params.map((p) => (p === true ? 1 : p === false ? 0 : p));

/** Inserts many rows of one shape atomically: prepared statements on SQLite, one INSERT per 50 rows in a transaction on PostgreSQL. */
export async function insertMany(
  tx: Tx,
  table: string,
  rows: Record<string, unknown>[],
): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  if (isPostgres(tx)) {
    if (rows.length <= 50) {
      await tx(table).insert(rows);
      return;
    }
    await tx.transaction(async (t) => {
      for (let i = 0; i < rows.length; i += 50) await t(table).insert(rows.slice(i, i + 50));
    });
    return;
  }
  const sql = `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`;
  await executeEach(
    tx,
    sql,
    rows.map((r) => columns.map((c) => r[c] ?? null)),
  );
}

/** SQLite: inserts one row with a cached prepared statement and returns its rowid. */
export async function insertRowSqlite(
  tx: Tx,
  table: string,
  row: Record<string, unknown>,
): Promise<number> {
  const columns = Object.keys(row);
  const sql = `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`;
  const values = sqliteParams(columns.map((c) => row[c] ?? null));
  // run(), never get() with RETURNING: an unfinished statement would block WAL checkpoints.
  return onConnection(tx, (conn) => Number(statement(conn, sql).run(...values).lastInsertRowid));
}
