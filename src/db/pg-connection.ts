// Connections of our own beside knex's pool (graphile-worker's pool, the LISTEN client): the
// same server and credentials, taken from knex, which has parsed DATABASE_URL by now and keeps the
// password out of enumeration. Behind a transaction pooler (PgBouncer), DATABASE_URL is the pooler
// and these need a session of their own (LISTEN, graphile-worker's session state):
// DATABASE_SESSION_URL, given to createDb, is then used instead.
import type pg from 'pg';
import type { Db, Tx } from './engine.ts';

// Keyed by knex's client config: a transaction's client is a new object (knex's makeTxClient)
// that shares only the config with the handle's client. Keyed by the client itself, every
// statement inside a transaction was named behind PgBouncer ("prepared statement already exists").
const sessionUrls = new WeakMap<object, string>();
const keyOf = (h: Db | Tx): object => (h.client as { config: object }).config;

/** Connections that keep session state (LISTEN) go to `url`, not to the request pool's server. */
export function useSessionUrl(db: Db, url: string): void {
  sessionUrls.set(keyOf(db), url);
}

/**
 * Named (server-side prepared) statements on the request pool: not behind a transaction pooler,
 * which DATABASE_SESSION_URL announces (PgBouncer before 1.21 loses them between transactions).
 */
export function namedStatementsAllowed({ tx }: { tx: Tx }): boolean {
  return !sessionUrls.has(keyOf(tx));
}

export function pgConnectionConfig(db: Db): pg.ClientConfig {
  const session = sessionUrls.get(keyOf(db));
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
