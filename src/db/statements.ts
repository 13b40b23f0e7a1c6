// Hot-path statements. knex recompiles every statement on every call (about 80-150 us per query on
// SQLite); cached prepared statements run the same SQL in a few microseconds.
// - Reads outside a transaction use the read connection and its kept rows (src/db/reader.ts).
// - Everything else runs on the connection knex itself hands out (the transaction's connection
//   inside one), taken and released through knex's pool, so it stays serialized with knex queries.
// - On PostgreSQL the same portable `?` SQL goes through knex, as a named statement: the server
//   parses and plans it once per connection, not on every call (spec/DECISIONS.md).
import crypto from 'node:crypto';
import type Database from 'better-sqlite3';
import type { Knex } from 'knex';
import { isPostgres, type Tx } from './engine.ts';
import { namedStatementsAllowed } from './pg-connection.ts';
import { readCached } from './reader.ts';
import { literalLimit, statement } from './sqlite-statements.ts';

export { statement };

const names = new Map<string, string>();
let renamed = 0;
/** A name per SQL text: the same text gets the same name on every connection, until it is stale. */
function statementName(sql: string): string {
  let name = names.get(sql);
  if (!name) {
    name = 's_' + crypto.createHash('sha1').update(sql).digest('base64url').slice(0, 20);
    if (names.size < 10_000) names.set(sql, name);
  }
  return name;
}

/**
 * A statement text built once per `key` by `build` and kept in `texts` (at most 100: past that it
 * is built on every call), for texts assembled from parts that vary little (column lists, hooks'
 * steps): building them on every call cost a hot path its concatenations, then a hash to name them.
 */
export function textOnce(texts: Map<string, string>, key: string, build: () => string): string {
  let sql = texts.get(key);
  if (sql === undefined) {
    sql = build();
    if (texts.size < 100) texts.set(key, sql);
  }
  return sql;
}

/**
 * Errors that say a named statement no longer fits: its plan's result type changed (a migration
 * added a column to a `SELECT *` table while this connection kept the statement: PostgreSQL then
 * refuses it on every run), or the server forgot it. The text gets a new name, prepared afresh
 * on each connection's next call; a statement outside a transaction runs again unnamed at once.
 */
const STALE = new Set(['0A000', '26000']);

/** A portable `?` statement on PostgreSQL, named when the pool allows it. */
async function pgRaw({ tx }: { tx: Tx }, sql: string, params: readonly unknown[]): Promise<any> {
  if (!namedStatementsAllowed({ tx })) return pgQuery({ tx }, sql, params);
  try {
    return await pgQuery({ tx }, sql, params, statementName(sql));
  } catch (err) {
    // Inside a transaction the failed statement aborted it: nothing to retry here.
    if (!STALE.has((err as { code?: string }).code ?? '')) throw err;
    names.set(sql, `${statementName(sql)}_${++renamed}`);
    if (tx.isTransaction) throw err;
    return pgQuery({ tx }, sql, params);
  }
}

/**
 * `?` placeholders as `$1..$n` (knex's rule: `\?` is a literal `?`), worked out once per text.
 * Null for a text knex would read otherwise (`??` names an identifier).
 */
const positional = new Map<string, string | null>();
function pgText(sql: string): string | null {
  let text = positional.get(sql);
  if (text === undefined) {
    let n = 0;
    text = sql.includes('??')
      ? null
      : sql.replace(/(\\*)\?/g, (_m, escapes: string) => (escapes.length % 2 ? '?' : `$${++n}`));
    if (positional.size < 10_000) positional.set(sql, text);
  }
  return text;
}

/**
 * Runs a statement on the connection knex would use (the transaction's own inside one; else one
 * from knex's pool, returned after), as knex's raw does it but without its query builder and
 * runner: they were about a tenth of the CPU of a GET on PostgreSQL, whose statements are fixed
 * texts. Listeners of knex's 'query' event still hear it (tests and bench/queries.ts count them).
 */
async function pgQuery(
  { tx }: { tx: Tx },
  sql: string,
  params: readonly unknown[],
  name?: string,
): Promise<any> {
  const text = pgText(sql);
  if (text === null || params.includes(undefined)) {
    // knex's own rules (identifiers, its refusal of undefined bindings).
    const raw = tx.raw(sql, params as any[]);
    return name ? raw.options({ name }) : raw;
  }
  const client = tx.client as any;
  if (tx.isTransaction && (tx as Knex.Transaction).isCompleted())
    throw new Error('Transaction query already complete, run with DEBUG=knex:tx for more info');
  const conn = await client.acquireConnection();
  try {
    if (client.listenerCount('query') > 0)
      client.emit('query', {
        __knexUid: conn.__knexUid,
        __knexTxId: conn.__knexTxId,
        sql: text,
        bindings: params,
        method: 'raw',
        ...(name ? { options: { name } } : {}),
      });
    return await new Promise((resolve, reject) => {
      const config = name ? { text, values: params, name } : { text, values: params };
      conn.query(config, (err: Error | null, result: unknown) => {
        if (!err) return resolve(result);
        // As knex words it (the text, without the values: they may be personal data).
        err.message = `${text} - ${err.message}`;
        reject(err);
      });
    });
  } finally {
    await client.releaseConnection(conn);
  }
}

/** First row of a portable `?`-parameterized SELECT, or undefined. */
export async function firstRow<T = Record<string, unknown>>(
  { tx }: { tx: Tx },
  sql: string,
  params: readonly unknown[],
  /** `stable`: the statement reads only the credentials and accounts tables (src/db/reader.ts). */
  options: { stable?: boolean } = {},
): Promise<T | undefined> {
  // The read connection binds no booleans either.
  const cached = isPostgres(tx)
    ? undefined
    : readCached(tx, sql, sqliteParams(params), options.stable === true);
  if (cached) return cached.row as T | undefined;
  if (!isPostgres(tx)) {
    return onConnection(
      { tx },
      (conn) => statement(conn, sql).get(...sqliteParams(params)) as T | undefined,
    );
  }
  const result = await pgRaw({ tx }, sql, params);
  return result.rows[0] as T | undefined;
}

/**
 * Every row of a portable `?`-parameterized SELECT, on the caller's connection (the transaction's
 * inside one); on SQLite a cached prepared statement, not the read connection's kept rows.
 */
export async function allRows<T = Record<string, unknown>>(
  { tx }: { tx: Tx },
  sql: string,
  params: readonly unknown[],
): Promise<T[]> {
  if (isPostgres(tx)) return (await pgRaw({ tx }, sql, params)).rows as T[];
  // A trailing `LIMIT ?` as a literal, as in knex's queries (src/db/sqlite-statements.ts).
  const values = sqliteParams(params);
  const run = literalLimit(sql, values) ?? { sql, bindings: values };
  return onConnection({ tx }, (conn) => statement(conn, run.sql).all(...run.bindings) as T[]);
}

/** `UPDATE table SET a = ?, b = ? WHERE id = ?`: the SQL depends only on the columns named. */
export function updateSql(table: string, columns: string[], where = 'id = ?'): string {
  return `UPDATE ${table} SET ${columns.map((c) => `${c} = ?`).join(', ')} WHERE ${where}`;
}

/** Runs a portable `?`-parameterized write; returns the number of rows changed. */
export async function execute(
  { tx }: { tx: Tx },
  sql: string,
  params: readonly unknown[],
): Promise<number> {
  if (isPostgres(tx)) {
    const result = await pgRaw({ tx }, sql, params);
    return Number(result.rowCount ?? 0);
  }
  return onConnection({ tx }, (conn) => statement(conn, sql).run(...sqliteParams(params)).changes);
}

/** SQLite only: runs one write per row, atomically (a savepoint inside an open transaction). */
export async function executeEach(
  { tx }: { tx: Tx },
  sql: string,
  rows: readonly (readonly unknown[])[],
) {
  await onConnection({ tx }, (conn) => eachWriter(conn, sql)(rows));
}

/**
 * Per connection and statement, the function that runs it once per row inside a transaction (a
 * savepoint when one is open): better-sqlite3's `transaction()` builds four wrappers each time it
 * is called, so it is called once (the audit trail's group write runs this on every turn).
 */
const eachWriters = new WeakMap<
  Database.Database,
  Map<string, (rows: readonly (readonly unknown[])[]) => void>
>();
function eachWriter(conn: Database.Database, sql: string) {
  let writers = eachWriters.get(conn);
  if (!writers) eachWriters.set(conn, (writers = new Map()));
  let write = writers.get(sql);
  if (!write) {
    const stmt = statement(conn, sql);
    write = conn.transaction((rows: readonly (readonly unknown[])[]) => {
      for (const row of rows) stmt.run(...sqliteParams(row));
    });
    // A crude bound, as the statement cache's: the texts are few (one per table and shape).
    if (writers.size >= 1000) writers.clear();
    writers.set(sql, write);
  }
  return write;
}

async function onConnection<T>({ tx }: { tx: Tx }, fn: (conn: Database.Database) => T): Promise<T> {
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
  { tx }: { tx: Tx },
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
    { tx },
    sql,
    rows.map((r) => columns.map((c) => r[c] ?? null)),
  );
}

/** SQLite: inserts one row with a cached prepared statement and returns its rowid. */
export async function insertRowSqlite(
  { tx }: { tx: Tx },
  table: string,
  row: Record<string, unknown>,
): Promise<number> {
  const columns = Object.keys(row);
  const sql = `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`;
  const values = sqliteParams(columns.map((c) => row[c] ?? null));
  // run(), never get() with RETURNING: an unfinished statement would block WAL checkpoints.
  return onConnection({ tx }, (conn) =>
    Number(statement(conn, sql).run(...values).lastInsertRowid),
  );
}

/**
 * Updates many rows by id, each with its own values of the same columns: one statement on
 * PostgreSQL (`UPDATE ... FROM unnest(...)`, `types` naming each column's PostgreSQL type for the
 * arrays), one cached prepared statement per row on SQLite. With `guard`, only rows whose column
 * `guard` still holds the row's `guardValue` change. Returns the number of rows changed.
 */
export async function updateRows(
  { tx }: { tx: Tx },
  table: string,
  types: Record<string, string>,
  rows: { id: number; values: Record<string, unknown>; guardValue?: unknown }[],
  guard?: string,
): Promise<number> {
  if (rows.length === 0) return 0;
  const columns = Object.keys(types);
  if (!isPostgres(tx)) {
    let n = 0;
    const where = guard ? `id = ? AND ${guard} = ?` : 'id = ?';
    for (const r of rows) {
      const params: unknown[] = [...columns.map((c) => r.values[c] ?? null), r.id];
      if (guard) params.push(r.guardValue);
      n += await execute({ tx }, updateSql(table, columns, where), params);
    }
    return n;
  }
  const arrays = [
    rows.map((r) => r.id),
    ...columns.map((c) => rows.map((r) => r.values[c] ?? null)),
  ];
  const casts = ['?::int[]', ...columns.map((c) => `?::${types[c]}[]`)];
  const names = ['id', ...columns];
  if (guard) {
    arrays.push(rows.map((r) => r.guardValue ?? null));
    casts.push(`?::${types[guard] ?? 'text'}[]`);
    names.push('guard_value');
  }
  const sql =
    `UPDATE ${table} AS t SET ${columns.map((c) => `${c} = v.${c}`).join(', ')} ` +
    `FROM unnest(${casts.join(', ')}) AS v(${names.join(', ')}) WHERE t.id = v.id` +
    (guard ? ` AND t.${guard} = v.guard_value` : '');
  const result = await tx.raw(sql, arrays as any[]);
  return Number(result.rowCount ?? 0);
}

/**
 * PostgreSQL: inserts rows of one shape as `INSERT ... SELECT * FROM json_to_recordset(?)`, the
 * rows sent as one JSON parameter (`types` names each column's PostgreSQL type, in the rows' key
 * order; keys not in it are ignored, a missing or undefined value is null). One parameter, not one
 * per value nor an array per column: node-postgres writes an array parameter element by element,
 * each escaped through two regular expressions, which was a quarter of what a 500-row import chunk
 * allocated; JSON.stringify writes the whole chunk as one string. `tail` follows the SELECT
 * (`ON CONFLICT ...`, `RETURNING ...`). Returns the rows returned, in the rows' order.
 */
export async function insertJson(
  { tx }: { tx: Tx },
  table: string,
  types: Record<string, string>,
  rows: Record<string, unknown>[],
  tail = '',
  /** A named statement (its text is fixed per call site): planned once per connection. */
  options: { named?: boolean } = {},
): Promise<Record<string, unknown>[]> {
  const columns = Object.keys(types);
  const sql =
    `INSERT INTO ${table} (${columns.join(', ')}) ` +
    `SELECT * FROM json_to_recordset(?::json) AS v(${columns.map((c) => `${c} ${types[c]}`).join(', ')}) ${tail}`;
  const params = [JSON.stringify(rows, wellFormed)];
  return (await (options.named ? pgRaw({ tx }, sql, params) : tx.raw(sql, params))).rows;
}

type Unicode = { isWellFormed(): boolean; toWellFormed(): string };
/**
 * A lone surrogate (valid in a JavaScript string, and in a request's JSON) becomes U+FFFD, as
 * node-postgres's UTF-8 encoding of a text parameter makes it: JSON.stringify escapes it instead,
 * and PostgreSQL refuses that escape, so the insert would fail where a single-row one succeeds.
 */
const wellFormed = (_key: string, v: unknown) =>
  typeof v === 'string' && !(v as unknown as Unicode).isWellFormed()
    ? (v as unknown as Unicode).toWellFormed()
    : v;
