// Prepared statements of a SQLite connection, kept by SQL text. Preparing is a parse and a plan
// (tens of microseconds); knex's better-sqlite3 client prepared every query afresh, which was a
// tenth of the CPU of a sandbox scenario's load. Bounded: knex writes a new text for each length
// of an IN list, so the texts are not a fixed set; the least recently used go first.
// Each is prepared value-blind (valueBlind below): otherwise most would be prepared again at every
// run anyway.
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
 * value can change the plan (an index that yields the rows in order against a sort), so the hot
 * statements write their LIMIT as a literal instead.
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

// knex has no hook for this: its own client, with _query (knex 3.x's, less the per-query prepare).
const require = createRequire(import.meta.url);
const BetterSqlite3Client = require('knex/lib/dialects/better-sqlite3/index.js');

export class CachingSqliteClient extends BetterSqlite3Client {
  async _query(connection: Database.Database, obj: any) {
    // A query that sets safeIntegers would change the shared statement: knex's own path.
    if (obj.options?.safeIntegers !== undefined) return super._query(connection, obj);
    if (!obj.sql) throw new Error('The query is empty');
    if (!connection) throw new Error('No connection provided');
    const stmt = statement(connection, obj.sql);
    const bindings = this._formatBindings(obj.bindings);
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
