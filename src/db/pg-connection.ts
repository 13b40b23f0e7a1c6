// Connections of our own beside knex's pool (graphile-worker's pool, the LISTEN client): the
// same server and credentials, taken from knex, which has parsed DATABASE_URL by now and keeps the
// password out of enumeration.
import type pg from 'pg';
import type { Db } from './engine.ts';

export function pgConnectionConfig(db: Db): pg.ClientConfig {
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
