// engine: any
// DATABASE_POOL_MAX reaches the PostgreSQL pool, DATABASE_SESSION_URL the session connections (no
// connection is opened here).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../src/config.ts';
import { createDb } from '../../src/db/knex.ts';
import { pgConnectionConfig } from '../../src/db/pg-connection.ts';

const t = suite('DATABASE_POOL_MAX, DATABASE_SESSION_URL');

t('default 10; the configured size is the pool knex builds', async () => {
  assert.is(loadConfig({}).databasePoolMax, 10);
  const config = loadConfig({ DATABASE_POOL_MAX: '3' });
  const db = createDb('postgres://u:p@127.0.0.1:1/none', { poolMax: config.databasePoolMax });
  try {
    assert.is((db.client as any).pool.max, 3);
  } finally {
    await db.destroy();
  }
});

t('a value that cannot work is refused', () => {
  for (const v of ['0', '-1', 'ten', '1001'])
    assert.throws(() => loadConfig({ DATABASE_POOL_MAX: v }), /DATABASE_POOL_MAX/);
});

t('DATABASE_SESSION_URL: a postgres:// URL beside a postgres:// DATABASE_URL, or nothing', () => {
  const pg = 'postgres://u:p@pooler:6432/db';
  const direct = 'postgres://u:p@db:5432/db';
  assert.is(loadConfig({ DATABASE_URL: pg }).databaseSessionUrl, undefined);
  assert.is(
    loadConfig({ DATABASE_URL: pg, DATABASE_SESSION_URL: direct }).databaseSessionUrl,
    direct,
  );
  assert.throws(
    () => loadConfig({ DATABASE_URL: pg, DATABASE_SESSION_URL: 'mysql://x' }),
    /DATABASE_SESSION_URL/,
  );
  // SQLite has no session to split off: a setting that would do nothing is refused.
  assert.throws(
    () => loadConfig({ DATABASE_URL: 'sqlite:x.db', DATABASE_SESSION_URL: direct }),
    /DATABASE_SESSION_URL/,
  );
});

t('the session connections (LISTEN, job queue) go to DATABASE_SESSION_URL', async () => {
  const db = createDb('postgres://u:p@pooler:6432/db', { sessionUrl: 'postgres://u:p@db:5432/db' });
  const plain = createDb('postgres://u:p@pooler:6432/db');
  try {
    assert.equal(pgConnectionConfig(db), { connectionString: 'postgres://u:p@db:5432/db' });
    assert.is(pgConnectionConfig(plain).host, 'pooler');
    assert.is(pgConnectionConfig(plain).port, 6432);
  } finally {
    await db.destroy();
    await plain.destroy();
  }
});

t.run();
