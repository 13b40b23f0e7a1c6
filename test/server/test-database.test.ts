// The suites' own databases leave nothing behind: on PostgreSQL a suite's schema and the job
// queue's `<schema>_jobs` twin beside it are dropped, on SQLite the file's directory is removed.
import fs from 'node:fs';
import knexFactory from 'knex';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, freshDatabase } from '../helpers/app.ts';

const t = suite('test databases');

async function schemasLike(url: string, prefix: string): Promise<string[]> {
  const admin = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  try {
    const rows = await admin('pg_namespace')
      .where('nspname', 'like', `${prefix}%`)
      .select('nspname');
    return rows.map((r: { nspname: string }) => r.nspname).sort();
  } finally {
    await admin.destroy();
  }
}

t('a booted app, closed, leaves no schema and no file behind', async () => {
  const database = await freshDatabase();
  const b = await boot({ database });
  await b.app.startWorkers(); // the job queue creates its tables on PostgreSQL
  await b.close();
  if (database.schema) {
    const left = await schemasLike(database.url, database.schema);
    assert.equal(left, [database.schema, `${database.schema}_jobs`], 'both exist before the drop');
    await database.drop();
    assert.equal(await schemasLike(database.url, database.schema), []);
  } else {
    const file = database.url.slice('sqlite:'.length);
    assert.ok(fs.existsSync(file));
    await database.drop();
    assert.not.ok(fs.existsSync(file));
  }
});

t.run();
