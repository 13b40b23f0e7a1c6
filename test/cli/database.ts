// A fresh, empty database reachable through a plain DATABASE_URL, for suites that spawn processes
// (the admin CLI, the server): a SQLite file, or on PostgreSQL a database of its own, since a
// child process cannot be pointed at a test schema.
import crypto from 'node:crypto';
import knexFactory from 'knex';
import { createDb } from '../../src/db/knex.ts';
import { freshDatabase, type TestDatabase } from '../helpers/app.ts';

export async function processDatabase(): Promise<TestDatabase> {
  const pg = process.env.TEST_DATABASE_URL;
  if (!pg) return freshDatabase();
  const name = 'school_cli_' + crypto.randomBytes(6).toString('hex');
  const admin = () => knexFactory({ client: 'pg', connection: pg, pool: { min: 0, max: 1 } });
  const a = admin();
  await a.raw(`CREATE DATABASE "${name}"`);
  await a.destroy();
  const url = new URL(pg);
  url.pathname = '/' + name;
  return {
    db: createDb(url.toString()),
    url: url.toString(),
    async drop() {
      const d = admin();
      try {
        // FORCE: a child process killed mid-test may still hold a connection. FORCE may not end
        // another role's backend (an autovacuum worker visiting the new database, as seen once in CI): it
        // is gone within moments, so the drop is tried again (SQLSTATE 42501), for up to 10 s.
        for (let attempt = 1; ; attempt++) {
          try {
            await d.raw(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
            break;
          } catch (err) {
            if ((err as { code?: string }).code !== '42501' || attempt >= 40) throw err;
            await new Promise((r) => setTimeout(r, 250));
          }
        }
      } finally {
        await d.destroy();
      }
    },
  };
}
