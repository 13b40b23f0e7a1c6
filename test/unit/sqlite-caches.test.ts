// engine: any
// SQLite's page caches, bounded for a flat peak RSS (spec/DECISIONS.md, "SQLite page caches"):
// better-sqlite3 builds SQLite with 16 MiB per connection, and a 100,000-row import filled the
// writer's and then the export snapshot's, each of them a third of the run's growth over 1,000
// rows. The writer keeps 8 MiB for the main file; a snapshot, which reads each page once, and the
// read connection, whose cache lasts until the writer's next commit, 2 MiB.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb } from '../../src/db/knex.ts';
import { migrate } from '../../src/db/migrate.ts';
import { closeSideConnections, readCached } from '../../src/db/reader.ts';
import { withSnapshot } from '../../src/db/snapshot.ts';

/** `PRAGMA cache_size` as SQLite answers it: negative, in KiB. */
const pragma = (schema: string) => `PRAGMA ${schema}.cache_size`;

test('the writer caches 8 MiB of the main file, the read and snapshot connections 2 MiB', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-caches-'));
  const db = createDb(`sqlite:${path.join(dir, 'c.db')}`);
  try {
    await migrate(db);
    const [writer] = await db.raw(pragma('main'));
    assert.equal(writer, { cache_size: -8000 });
    const [snapshot] = await withSnapshot(db, (s) =>
      s.all((k) => k.raw(pragma('main')) as unknown as Knex.QueryBuilder),
    );
    assert.equal(snapshot, { cache_size: -2000 });
    // While the writer is in a transaction, a read outside it goes to the read connection.
    const read = await db.transaction(async () => readCached(db, pragma('main'), [], false));
    assert.equal(read, { row: { cache_size: -2000 } });
  } finally {
    await db.destroy();
    await closeSideConnections(db);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
