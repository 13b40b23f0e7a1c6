// engine: any
// SQLite WAL checkpoints run in a worker thread (src/db/checkpoint.ts), never inside a request's
// commit: the writer's automatic checkpoint is off, and committed frames still reach the database
// file, past the threshold at once and below it within a second.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Checkpointer } from '../../src/db/checkpoint.ts';
import { createDb } from '../../src/db/knex.ts';
import { closeSideConnections } from '../../src/db/reader.ts';

/** The first `bytes` bytes of a file. */
function head(file: string, bytes: number): Buffer {
  const header = Buffer.alloc(bytes);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, header, 0, bytes, 0);
  } finally {
    fs.closeSync(fd);
  }
  return header;
}

/** mxFrame (last WAL frame) and nBackfill (frames copied to the database) from the -shm header. */
function walState(file: string): { frames: number; backfilled: number } {
  const header = head(file + '-shm', 100);
  return { frames: header.readUInt32LE(16), backfilled: header.readUInt32LE(96) };
}

/** The WAL file's checkpoint sequence number (header offset 12): it moves when the WAL restarts. */
const walSequence = (file: string): number => head(file + '-wal', 16).readUInt32BE(12);

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

async function withDb(fn: (db: ReturnType<typeof createDb>, file: string) => Promise<void>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-ckpt-'));
  const file = path.join(dir, 'x.db');
  const db = createDb(`sqlite:${file}`);
  try {
    await db.raw('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)');
    await fn(db, file);
  } finally {
    await db.destroy();
    await closeSideConnections(db);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('the writer never checkpoints by itself', async () => {
  await withDb(async (db) => {
    const [row] = await db.raw('PRAGMA wal_autocheckpoint');
    assert.is(row.wal_autocheckpoint, 0);
  });
});

test('a large WAL is checkpointed by the worker', async () => {
  await withDb(async (db, file) => {
    const sequence = walSequence(file);
    // 1,500 commits of a page or more each: past the 1,000-frame threshold.
    for (let i = 0; i < 1500; i++) await db('t').insert({ body: 'x'.repeat(3000) });
    const before = walState(file);
    // A worker fast enough has checkpointed all of it already, and the WAL restarted from frame 0.
    const restarted = walSequence(file) !== sequence;
    assert.ok(before.frames >= 1500 || before.backfilled > 0 || restarted, JSON.stringify(before));
    const done = await until(() => {
      const s = walState(file);
      return s.backfilled > 0 && s.backfilled === s.frames;
    }, 5000);
    assert.ok(done, `WAL not checkpointed: ${JSON.stringify(walState(file))}`);
  });
});

test('a few frames are checkpointed within about a second', async () => {
  await withDb(async (db, file) => {
    await db('t').insert({ body: 'small' });
    const start = walState(file);
    assert.ok(start.frames > start.backfilled, JSON.stringify(start));
    const done = await until(() => {
      const s = walState(file);
      return s.backfilled === s.frames;
    }, 3000);
    assert.ok(done, `WAL not checkpointed: ${JSON.stringify(walState(file))}`);
  });
});

test('a checkpointer that dies hands checkpoints back to the writer', async () => {
  const failed = new Promise<unknown>((resolve) => {
    // The worker cannot open a file that is not there: it dies at once.
    new Checkpointer([path.join(os.tmpdir(), 'school-no-such-dir', 'x.db')], resolve);
  });
  const err = await Promise.race([
    failed,
    new Promise((r) => setTimeout(() => r('timeout'), 5000)),
  ]);
  assert.match(String(err), /unable to open|directory does not exist|SQLITE_CANTOPEN/i);
});

test.run();
