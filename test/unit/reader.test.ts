// engine: any
// The SQLite read cache (src/db/reader.ts): credential rows kept across this process's commits
// that did not write them, and dropped when anyone else's commit could have changed them.
// "Another process" is a real one (node with better-sqlite3), as the admin CLI would be.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb, type Db } from '../../src/db/knex.ts';
import { migrate } from '../../src/db/migrate.ts';
import { closeSideConnections, readCached } from '../../src/db/reader.ts';
import { credentialsRepo } from '../../src/domain/credentials/repo.ts';

const turn = () => new Promise((r) => setImmediate(r));
const driver = createRequire(import.meta.url).resolve('better-sqlite3');

/** Sets credential 1's status from another process. */
function otherProcess(file: string, status: string): void {
  const script =
    `const db = new (require(${JSON.stringify(driver)}))(${JSON.stringify(file)});` +
    `db.pragma('busy_timeout = 5000');` +
    `db.prepare("UPDATE credentials SET status = '${status}' WHERE id = 1").run(); db.close();`;
  execFileSync(process.execPath, ['-e', script]);
}

async function fresh(): Promise<{ db: Db; file: string; close(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-reader-'));
  const file = path.join(dir, 'r.db');
  const db = createDb(`sqlite:${file}`);
  await migrate(db);
  const now = new Date().toISOString();
  await db('accounts').insert({
    id: 1,
    name: 'a',
    sandbox: false,
    status: 'active',
    created_at: now,
  });
  const cred = (id: number, issuer: number | null) => ({
    id,
    account_id: 1,
    name: `c${id}`,
    secret_hash: `h${id}`,
    secret_last4: 'abcd',
    environment: 'live',
    status: 'active',
    auth_mode: 'autonomous',
    permissions: '["*"]',
    issuer_id: issuer,
    revision: 'r',
    created_at: now,
    updated_at: now,
  });
  await db('credentials').insert([cred(1, null), cred(2, 1)]);
  await turn();
  return {
    db,
    file,
    async close() {
      await db.destroy();
      await closeSideConnections(db);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const status = async (db: Db, hash: string) =>
  (await credentialsRepo.findBySecretHash({ tx: db }, hash))?.credential.status;

test('a delegated credential keeps its rows: the issuer-chain read is not taken for a write', async () => {
  const { db, close } = await fresh();
  try {
    const first = await credentialsRepo.findBySecretHash({ tx: db }, 'h2');
    const chain = await credentialsRepo.chainState({ tx: db }, 1);
    await turn();
    const sql =
      'SELECT c.*, a.sandbox AS account_sandbox, a.status AS account_status FROM credentials c ' +
      'JOIN accounts a ON a.id = c.account_id WHERE c.secret_hash = ?';
    const kept = readCached(db, sql, ['h2'], true)!.row;
    assert.is(readCached(db, sql, ['h2'], true)!.row, kept, 'the same frozen row');
    assert.is(first?.credential.status, 'active');
    assert.is(chain.revoked, false);
    await credentialsRepo.chainState({ tx: db }, 1);
    assert.is(readCached(db, sql, ['h2'], true)!.row, kept, 'still kept after the chain read');
  } finally {
    await close();
  }
});

test("another connection's revoke is seen on the next turn, even inside a deferred transaction", async () => {
  const { db, file, close } = await fresh();
  try {
    assert.is(await status(db, 'h1'), 'active');
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    // knex's own transaction begins deferred: after a read it holds a snapshot, and the writer's
    // data_version stays what it was until it ends.
    const trx = db.transaction(async (t) => {
      await t('jobs').first();
      await hold;
    });
    await turn();
    await turn();
    otherProcess(file, 'revoked');
    await turn();
    await turn();
    assert.is(await status(db, 'h1'), 'revoked', 'while the deferred transaction is open');
    release();
    await trx;
    otherProcess(file, 'suspended');
    await turn();
    await turn();
    assert.is(await status(db, 'h1'), 'suspended', 'and after it');
  } finally {
    await close();
  }
});

test.run();
