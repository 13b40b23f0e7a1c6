// engine: any
// DATABASE_POOL_MAX reaches the PostgreSQL pool (no connection is opened here).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../src/config.ts';
import { createDb } from '../../src/db/knex.ts';

const t = suite('DATABASE_POOL_MAX');

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

t.run();
