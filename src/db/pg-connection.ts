// Connections of our own beside knex's pool (graphile-worker's pool, the LISTEN client): the
// same server and credentials, taken from knex, which has parsed DATABASE_URL by now and keeps the
// password out of enumeration. Behind a transaction pooler (PgBouncer), DATABASE_URL is the pooler
// and these need a session of their own (LISTEN, graphile-worker's session state):
// DATABASE_SESSION_URL, given to createDb, is then used instead.
import type pg from 'pg';
import type { Db } from './engine.ts';

const sessionUrls = new WeakMap<Db, string>();

/** Connections that keep session state (LISTEN) go to `url`, not to the request pool's server. */
export function useSessionUrl(db: Db, url: string): void {
  sessionUrls.set(db, url);
}

export function pgConnectionConfig(db: Db): pg.ClientConfig {
  const session = sessionUrls.get(db);
  if (session) return { connectionString: session };
  const c = (db.client as { connectionSettings: pg.ClientConfig }).connectionSettings;
  return {
    user: c.user,
    password: c.password,
    host: c.host,
    port: c.port === undefined ? undefined : Number(c.port),
    database: c.database,
    ssl: c.ssl,
  };
}
