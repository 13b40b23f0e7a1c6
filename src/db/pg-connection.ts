// Connections of our own beside knex's pool (graphile-worker's pool, the LISTEN client): the
// same server and credentials, taken from knex, which has parsed DATABASE_URL by now and keeps the
// password out of enumeration. Behind a transaction pooler (PgBouncer), DATABASE_URL is the pooler
// and these need a session of their own (LISTEN, graphile-worker's session state):
// DATABASE_SESSION_URL, given to createDb, is then used instead.
import type pg from 'pg';
import type { Db, Tx } from './engine.ts';

// Keyed by knex's client, which a handle's transactions share with it.
const sessionUrls = new WeakMap<object, string>();

/** Connections that keep session state (LISTEN) go to `url`, not to the request pool's server. */
export function useSessionUrl(db: Db, url: string): void {
  sessionUrls.set(db.client, url);
}

/**
 * Named (server-side prepared) statements on the request pool: not behind a transaction pooler,
 * which DATABASE_SESSION_URL announces (PgBouncer before 1.21 loses them between transactions).
 */
export function namedStatementsAllowed(tx: Tx): boolean {
  return !sessionUrls.has(tx.client);
}

export function pgConnectionConfig(db: Db): pg.ClientConfig {
  const session = sessionUrls.get(db.client);
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
