// Retention: audit entries older than AUDIT_RETENTION_DAYS (90) go with the hourly sweep.audit job,
// on the injectable clock; on SQLite the freed pages go back to the file system (incremental
// vacuum of the main and audit files), so disk use stays flat.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DAY } from '../../src/clock.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { migrate } from '../../src/db/migrate.ts';
import { closeSideConnections } from '../../src/db/reader.ts';
import { schedules, taskList } from '../../src/tasks/index.ts';
import { boot, type Booted } from '../helpers/app.ts';

const pg = Boolean(process.env.TEST_DATABASE_URL);

async function sweep(b: Booted): Promise<void> {
  await taskList(b.app.services)['sweep.audit']!(null, {
    jobId: 'test',
    attempt: 1,
    workerId: 'test',
    signal: new AbortController().signal,
  });
}

async function pragma(db: Db, name: string): Promise<number> {
  const rows = await db.raw(`PRAGMA ${name}`);
  return Number(Object.values(rows[0])[0]);
}

async function requests(b: Booted, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await b.api('GET', '/api/v3/capabilities');
    assert.is(res.status, 200);
    ids.push(res.headers.get('x-request-id')!);
  }
  return ids;
}

const count = async (b: Booted) =>
  Number((await b.app.db('audit_entries').count({ n: '*' }).first())!.n);

const t = suite('retention');

t('sweep.audit is scheduled hourly', () => {
  assert.equal(
    schedules.find((s) => s.task === 'sweep.audit'),
    { task: 'sweep.audit', everyMinutes: 60 },
  );
});

t('entries older than 90 days are swept; the audit file gives its pages back', async () => {
  const b = await boot();
  try {
    const old = await requests(b, 300);
    const pages = pg ? 0 : await pragma(b.app.db, 'audit.page_count');
    // 89 days later nothing is old enough.
    b.clock.advance(89 * DAY);
    await sweep(b);
    assert.is(await count(b), 300);
    // 91 days: the 300 go, the entries of the last two days stay.
    b.clock.advance(2 * DAY);
    const recent = await requests(b, 5);
    await sweep(b);
    assert.is(await count(b), 5);
    for (const id of [old[0]!, old[150]!, old[299]!])
      assert.is((await b.api('GET', `/api/v3/requests/${id}`)).status, 404);
    for (const id of recent) assert.is((await b.api('GET', `/api/v3/requests/${id}`)).status, 200);
    if (!pg) {
      assert.is(await pragma(b.app.db, 'audit.auto_vacuum'), 2, 'INCREMENTAL');
      assert.is(await pragma(b.app.db, 'auto_vacuum'), 2);
      assert.is(await pragma(b.app.db, 'audit.freelist_count'), 0, 'free pages given back');
      const after = await pragma(b.app.db, 'audit.page_count');
      assert.ok(after < pages, `audit file: ${pages} pages before, ${after} after`);
    }
  } finally {
    await b.close();
  }
});

t('the sweep walks in chunks and stops at the first younger entry', async () => {
  const b = await boot();
  try {
    await requests(b, 23);
    b.clock.advance(DAY);
    const young = await requests(b, 3);
    const cutoff = new Date(b.clock.now().getTime() - DAY / 2).toISOString();
    assert.is(await b.app.services.audit.purgeBefore(cutoff, 5), 23);
    assert.is(await count(b), 3);
    assert.is((await b.api('GET', `/api/v3/requests/${young[0]}`)).status, 200);
  } finally {
    await b.close();
  }
});

t('AUDIT_RETENTION_DAYS shortens the retention', async () => {
  const b = await boot({ env: { AUDIT_RETENTION_DAYS: '7' } });
  try {
    await requests(b, 4);
    b.clock.advance(6 * DAY);
    await sweep(b);
    assert.is(await count(b), 4);
    b.clock.advance(2 * DAY);
    await sweep(b);
    assert.is(await count(b), 0);
  } finally {
    await b.close();
  }
});

// PostgreSQL has no such mode: autovacuum makes deleted rows' space reusable.
if (!pg)
  t('SQLite: a file made before incremental vacuum is converted once, at start', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-vacuum-'));
    const file = path.join(dir, 'old.db');
    try {
      for (const f of [file, path.join(dir, 'old.audit.db')]) {
        const old = new Database(f);
        old.exec('CREATE TABLE leftover (x TEXT)');
        assert.is(old.pragma('auto_vacuum', { simple: true }), 0);
        old.close();
      }
      const db = createDb(`sqlite:${file}`);
      await migrate(db);
      assert.is(await pragma(db, 'auto_vacuum'), 2);
      assert.is(await pragma(db, 'audit.auto_vacuum'), 2);
      await db.destroy();
      await closeSideConnections(db);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

t.run();
