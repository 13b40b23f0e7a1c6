// Prepared statements of a SQLite connection, kept by SQL text. Preparing is a parse and a plan
// (tens of microseconds); knex's better-sqlite3 client prepared every query afresh, which was a
// tenth of the CPU of a sandbox scenario's load. Bounded: knex writes a new text for each length
// of an IN list, so the texts are not a fixed set; the least recently used go first.
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
    stmt = conn.prepare(sql);
    if (cache.size >= MAX_PER_CONNECTION) cache.delete(cache.keys().next().value!);
  }
  cache.set(sql, stmt);
  return stmt;
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
