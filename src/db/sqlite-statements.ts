// Prepared statements of a SQLite connection, kept by SQL text. Preparing is a parse and a plan
// (tens of microseconds); knex's better-sqlite3 client prepared every query afresh, which was a
// tenth of the CPU of a sandbox scenario's load. Bounded: knex writes a new text for each length
// of an IN list (and literalLimit for each LIMIT), so the texts are not a fixed set; the least
// recently used go first.
// Each is prepared value-blind (valueBlind below): otherwise most would be prepared again at every
// run anyway. knex's trailing `limit ?` is written as a literal (literalLimit below) for the same
// reason.
import { createRequire } from 'node:module';
import type Database from 'better-sqlite3';

const MAX_PER_CONNECTION = 1000;
const caches = new WeakMap<Database.Database, Map<string, Database.Statement>>();

export function statement(conn: Database.Database, sql: string): Database.Statement {
  let cache = caches.get(conn);
  if (!cache) caches.set(conn, (cache = new Map()));
  let stmt = cache.get(sql);
  if (stmt) {
    cache.delete(sql); // to the end: the most recently used
  } else {
    stmt = conn.prepare(valueBlind(sql));
    if (cache.size >= MAX_PER_CONNECTION) cache.delete(cache.keys().next().value!);
  }
  cache.set(sql, stmt);
  return stmt;
}

const LIMIT_BEFORE = /\b(LIMIT|OFFSET)\s*$/i;

/**
 * The SQL with each `?` placeholder written `+?` (outside quotes and comments), except a LIMIT's
 * or an OFFSET's. Why: while planning, SQLite looks at the values bound to some parameters (an
 * `x = ?` that a candidate plan would test row by row, in a join or under an ORDER BY; a LIMIT;
 * a LIKE pattern; a partial index's condition) and marks the statement to be planned again when
 * they are bound anew; better-sqlite3 clears the bindings after every run, which counts as that,
 * so such a statement was parsed and planned again at every run: 20-400 us instead of 2-20 (the
 * webhook claim's read, the fan-out's read of the endpoints, the job engine's poll). A unary plus
 * changes no value and no comparison (a parameter has no affinity either way) and still lets an
 * index use the value; SQLite just does not look into it (as with its
 * SQLITE_DBCONFIG_ENABLE_QPSG, which better-sqlite3 cannot set). A LIMIT or OFFSET `?` stays: its
 * value can change the plan (an index that yields the rows in order against a sort), so a LIMIT
 * is written as a literal instead (literalLimit for knex's and allRows' trailing one, the webhook
 * claim's among them; the job poll, which runs its statement itself, by hand).
 */
export function valueBlind(sql: string): string {
  if (!sql.includes('?')) return sql;
  let out = '';
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i]!;
    let end = i; // the last character of a quoted part or a comment that starts here
    if (c === "'" || c === '"' || c === '`' || c === '[') {
      end = sql.indexOf(c === '[' ? ']' : c, i + 1);
      if (end < 0) end = sql.length - 1;
    } else if (c === '-' && sql[i + 1] === '-') {
      end = sql.indexOf('\n', i);
      if (end < 0) end = sql.length - 1;
    } else if (c === '/' && sql[i + 1] === '*') {
      end = sql.indexOf('*/', i + 2);
      end = end < 0 ? sql.length - 1 : end + 1;
    }
    if (end > i) {
      out += sql.slice(i, end + 1);
      i = end;
    } else if (c === '?' && !LIMIT_BEFORE.test(out.slice(-12))) out += '+?';
    else out += c;
  }
  return out;
}

/**
 * The largest LIMIT written into the text (a list page reads its limit + 1: 2 to 201; v1's 151;
 * the purge's chunks of 1,000). Above it the `?` stays. One text per value and query shape: a
 * client that walks every page size of a list fills 200 of the cache's MAX_PER_CONNECTION, and
 * the least recently used texts go first (prepared again on their next use, as before).
 */
const MAX_LITERAL_LIMIT = 1000;
/** knex's `limit ?` (`limit ? offset ?` with an offset) at the very end of a statement. */
const TRAILING_LIMIT = /\slimit\s+\?(\s+offset\s+\?)?$/i;

/**
 * The statement with its trailing `limit ?` written as a literal and that value taken out of the
 * bindings, or null to run it as it is. Why: SQLite reads a bound LIMIT while planning (it may
 * choose an index that yields the rows in order over a sort) and marks the statement to be
 * planned again whenever it is bound anew, which better-sqlite3 does at every run: every knex
 * `.first()` and `.limit(n)` was parsed and planned at every run. A literal gives the same plan
 * once. Only the trailing one: its value is the last binding (or the last but one before an
 * OFFSET), as knex compiles a select's clauses in the order it writes them and LIMIT and OFFSET
 * last; a subquery's `limit ?` inside the text is left alone. An OFFSET keeps its `?`: SQLite
 * reads it only for a virtual table, so it costs no new plan, and written in it would make a new
 * text per page. -1 is knex's "no limit" before an OFFSET alone.
 */
export function literalLimit(
  sql: string,
  bindings: readonly unknown[],
): { sql: string; bindings: unknown[] } | null {
  if (sql.charCodeAt(sql.length - 1) !== 63 /* ? */) return null;
  const m = TRAILING_LIMIT.exec(sql.slice(-40));
  if (!m) return null;
  const at = bindings.length - (m[1] ? 2 : 1);
  const n = bindings[at];
  if (at < 0 || typeof n !== 'number' || !Number.isInteger(n)) return null;
  if (n < -1 || n > MAX_LITERAL_LIMIT) return null;
  const rest = bindings.slice();
  rest.splice(at, 1);
  const head = sql.slice(0, sql.length - m[0].length);
  return { sql: `${head} limit ${n}${m[1] ? ' offset ?' : ''}`, bindings: rest };
}

// knex has no hook for this: its own client, with _query (knex 3.x's, less the per-query prepare).
const require = createRequire(import.meta.url);
const BetterSqlite3Client = require('knex/lib/dialects/better-sqlite3/index.js');

export class CachingSqliteClient extends BetterSqlite3Client {
  async _query(connection: Database.Database, obj: any) {
    // A query that sets safeIntegers would change the shared statement: knex's own path.
    if (obj.options?.safeIntegers !== undefined) return super._query(connection, obj);
    if (!obj.sql) throw new Error('The query is empty');
    if (!connection) throw new Error('No connection provided');
    let sql: string = obj.sql;
    let bindings: unknown[] = this._formatBindings(obj.bindings);
    const literal = literalLimit(sql, bindings);
    if (literal) ({ sql, bindings } = literal);
    const stmt = statement(connection, sql);
    if (stmt.reader) {
      obj.response = stmt.all(bindings);
      return obj;
    }
    const response = stmt.run(bindings);
    obj.response = response;
    obj.context = { lastID: response.lastInsertRowid, changes: response.changes };
    return obj;
  }
}
