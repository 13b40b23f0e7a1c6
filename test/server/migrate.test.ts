// Migrations at start on PostgreSQL: several instances starting together on an empty schema all
// come up, and each migration runs once (an advisory lock per schema; knex's own lock row makes a
// second migrator fail instead of waiting). PostgreSQL only: on SQLite the server is one process.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb } from '../../src/db/knex.ts';
import { migrate, migrationNames } from '../../src/db/migrate.ts';
import { freshDatabase } from '../helpers/app.ts';

const PG = process.env.TEST_DATABASE_URL;
const t = suite('migrations at start');
const test = PG ? t : t.skip;
if (!PG) console.log('  SKIP migrations at start: PostgreSQL only (set TEST_DATABASE_URL).');

test('three migrators at once on an empty schema: all succeed, each migration runs once', async () => {
  // Processes start tens of milliseconds apart; in one process the race is certain (without the
  // lock, every run of this test failed: knex's tables created twice, its lock row taken).
  const database = await freshDatabase();
  const dbs = [0, 1, 2].map(() => createDb(database.url, { schema: database.schema }));
  try {
    const results = await Promise.allSettled(dbs.map((db) => migrate(db)));
    assert.equal(
      results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok')),
      ['ok', 'ok', 'ok'],
    );
    const rows = await dbs[0]!('knex_migrations').select('name');
    assert.equal(rows.map((r) => r.name).sort(), migrationNames());
  } finally {
    for (const db of dbs) await db.destroy();
    await database.db.destroy();
    await database.drop();
  }
});

t.run();
