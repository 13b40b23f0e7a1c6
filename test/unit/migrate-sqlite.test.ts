// engine: any
// Opening an up-to-date SQLite database writes nothing: the admin CLI opens the server's file
// while the server writes, and knex's migrator (which reads its lock row, then writes it, in one
// deferred transaction) got "database is locked" at once, without waiting, when one of the
// server's commits fell between that read and that write.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb } from '../../src/db/knex.ts';
import { migrate } from '../../src/db/migrate.ts';
import { closeSideConnections } from '../../src/db/reader.ts';

test('opening an up-to-date database writes nothing; a new one is migrated', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-migrate-'));
  const file = path.join(dir, 'school.db');
  const dbs = [createDb(`sqlite:${file}`), createDb(`sqlite:${file}`)];
  try {
    // SQLite counts the rows each connection changed; knex keeps one connection per database.
    const changes = async (db: (typeof dbs)[0]) =>
      Number(((await db.raw('SELECT total_changes() AS n')) as { n: number }[])[0]!.n);
    await migrate(dbs[0]!);
    assert.ok((await changes(dbs[0]!)) > 20, 'the new file was migrated');
    await dbs[0]!.destroy();
    await closeSideConnections(dbs[0]!);
    await migrate(dbs[1]!);
    assert.is(await changes(dbs[1]!), 0, 'the second opening wrote rows');
    const applied = await dbs[1]!('knex_migrations').count({ n: '*' });
    assert.ok(Number(applied[0]!.n) > 20);
  } finally {
    for (const db of dbs) {
      await db.destroy();
      await closeSideConnections(db);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
