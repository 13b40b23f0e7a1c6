// engine: any
// A server key that exists is read without writing: every process (the admin CLI beside a busy
// server) asks for its keys at start, and an ignored insert still waited for SQLite's write lock
// and failed with 'database is locked' when the server held it past busy_timeout.
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb } from '../../src/db/knex.ts';
import { migrate } from '../../src/db/migrate.ts';
import { closeSideConnections } from '../../src/db/reader.ts';
import { serverKey } from '../../src/db/server-keys.ts';

test('a key is created once; an existing one is read while another process writes', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-keys-'));
  const file = path.join(dir, 'school.db');
  const dbs = [createDb(`sqlite:${file}`), createDb(`sqlite:${file}`)];
  const writer = new Database(file);
  try {
    await migrate(dbs[0]!);
    const first = await serverKey(dbs[0]!, 'cursor', '2026-11-26T00:00:00.000Z');
    assert.is(first.length, 32);
    writer.prepare('BEGIN IMMEDIATE').run(); // the server, mid-write
    const started = performance.now();
    const again = await serverKey(dbs[1]!, 'cursor', '2026-11-26T01:00:00.000Z');
    assert.ok(again.equals(first), 'the same key');
    assert.ok(performance.now() - started < 4000, 'did not wait for the write lock');
    writer.prepare('ROLLBACK').run();
    const other = await serverKey(dbs[1]!, 'storage', '2026-11-26T01:00:00.000Z');
    assert.not.ok(other.equals(first), 'each name its own key');
    const rows = await dbs[1]!('server_keys').whereIn('name', ['cursor', 'storage']);
    assert.is(rows.length, 2);
  } finally {
    writer.close();
    for (const db of dbs) {
      await db.destroy();
      await closeSideConnections(db);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
