// Time spent in each SQLite statement while the real app serves POST /api/v3/users (or GET with
// `get`): wraps better-sqlite3's Statement run/get/all, sends N requests at C in flight, prints the
// statements by total time.   node bench/sql-time.ts [post|get] [n] [concurrency]
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';

const [mode = 'post', nArg = '5000', cArg = '10'] = process.argv.slice(2);
const stats = new Map<string, { n: number; ns: bigint }>();
// WAL frames each COMMIT appends, per file (the wal-index header's mxFrame, at byte 16 of -shm).
const shms: { name: string; fd: number | null; frames: number }[] = [];
// PROBE_PAGES=1: which pages (of which table or index) the main file's commits wrote.
const pageCounts = new Map<number, number>();
let walFd: number | null = null;
const frameHeader = Buffer.alloc(4);
function countPages(from: number, to: number) {
  walFd ??= fs.openSync(path.join(dir, 'q.db-wal'), 'r');
  for (let f = from + 1; f <= to; f++) {
    fs.readSync(walFd, frameHeader, 0, 4, 32 + (f - 1) * (24 + 4096));
    const page = frameHeader.readUInt32BE(0);
    pageCounts.set(page, (pageCounts.get(page) ?? 0) + 1);
  }
}
const header = Buffer.alloc(20);
const mxFrame = (shm: (typeof shms)[number]) => {
  try {
    if (shm.fd === null) shm.fd = fs.openSync(shm.name, 'r');
    fs.readSync(shm.fd, header, 0, 20, 0);
    return header.readUInt32LE(16);
  } catch {
    return 0;
  }
};
const probe = new Database(':memory:').prepare('SELECT 1');
const proto = Object.getPrototypeOf(probe);
for (const m of ['run', 'get', 'all'] as const) {
  const orig = proto[m];
  proto[m] = function (this: Database.Statement, ...args: unknown[]) {
    const commit = this.source === 'COMMIT';
    const before = commit ? shms.map(mxFrame) : [];
    const t = process.hrtime.bigint();
    try {
      return orig.apply(this, args);
    } finally {
      if (commit)
        shms.forEach((shm, i) => {
          const after = mxFrame(shm);
          shm.frames += Math.max(0, after - before[i]!);
          if (i === 0 && process.env.PROBE_PAGES && after > before[i]!)
            countPages(before[i]!, after);
        });
      const s = stats.get(this.source) ?? { n: 0, ns: 0n };
      s.n++;
      s.ns += process.hrtime.bigint() - t;
      stats.set(this.source, s);
    }
  };
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-sqltime-'));
const app = await createApp(
  loadConfig({
    DATABASE_URL: `sqlite:${path.join(dir, 'q.db')}`,
    FILES_DIR: path.join(dir, 'files'),
    SECRETS_KEY: crypto.randomBytes(32).toString('base64url'),
    LOG_LEVEL: 'silent',
    WORKERS: 'false',
    RATE_LIMIT_SOURCE: '100000000',
    RATE_LIMIT_ACCOUNT: '100000000',
    RATE_LIMIT_CREDENTIAL: '100000000',
  }),
);
const port = await app.listen(0, '127.0.0.1');
for (const f of ['q.db', 'q.audit.db'])
  shms.push({ name: path.join(dir, f + '-shm'), fd: null, frames: 0 });
const { id: accountId } = await app.services.accounts.createAccount({ name: 'Q' });
const { secret } = await app.services.accounts.createRootCredential({
  accountId,
  permissions: ['*'],
});
// PROBE_SQL: statements (separated by ;) run before the load, to try a schema change.
for (const sql of (process.env.PROBE_SQL ?? '').split(';').filter((x) => x.trim()))
  await app.db.raw(sql);
let i = 0;
const post = () =>
  fetch(`http://127.0.0.1:${port}/api/v3/users`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${secret}`,
      'content-type': 'application/json',
      'idempotency-key': `k-${++i}`,
    },
    body: JSON.stringify({ name: 'U', email: `u${i}@e.com` }),
  }).then((r) => r.arrayBuffer());
const first: any = await (
  await fetch(`http://127.0.0.1:${port}/api/v3/users`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${secret}`,
      'content-type': 'application/json',
      'idempotency-key': 'seed',
    },
    body: JSON.stringify({ name: 'U', email: 'seed@e.com' }),
  })
).json();
const get = () =>
  fetch(`http://127.0.0.1:${port}/api/v3/users/${first.data.id}`, {
    headers: { authorization: `Bearer ${secret}` },
  }).then((r) => r.arrayBuffer());
const call = mode === 'get' ? get : post;
for (let k = 0; k < 500; k++) await call();
stats.clear();
for (const shm of shms) shm.frames = 0;
const n = Number(nArg);
let sent = 0;
const t0 = process.hrtime.bigint();
const cpu0 = process.cpuUsage();
await Promise.all(
  Array.from({ length: Number(cArg) }, async () => {
    while (sent < n) {
      sent++;
      await call();
    }
  }),
);
const cpu = process.cpuUsage(cpu0);
const wall = Number(process.hrtime.bigint() - t0) / 1e6;
let total = 0n;
for (const s of stats.values()) total += s.ns;
console.log(
  `${n} ${mode} in ${wall.toFixed(0)} ms; process CPU ${((cpu.user + cpu.system) / n).toFixed(0)} us/req (client included); SQL ${(Number(total) / 1e3 / n).toFixed(1)} us/req`,
);
console.log(
  'WAL frames per request at COMMIT: ' +
    shms
      .map((shm) => `${path.basename(shm.name, '-shm')} ${(shm.frames / n).toFixed(2)}`)
      .join(', '),
);
if (process.env.PROBE_PAGES) {
  const owner = new Map<number, string>();
  const conn = new Database(path.join(dir, 'q.db'), { readonly: true });
  for (const r of conn.prepare('SELECT name, pageno FROM dbstat').all() as any[])
    owner.set(r.pageno, r.name);
  const byName = new Map<string, number>();
  for (const [page, count] of pageCounts) {
    const name = owner.get(page) ?? (page === 1 ? 'page 1 (header)' : 'other (ptrmap, freelist)');
    byName.set(name, (byName.get(name) ?? 0) + count);
  }
  console.log('main-file pages written per request, by table or index:');
  for (const [name, count] of [...byName].sort((a, b) => b[1] - a[1]))
    console.log(`  ${(count / n).toFixed(2).padStart(6)}  ${name}`);
  conn.close();
}
for (const [sql, s] of [...stats].sort((a, b) => Number(b[1].ns - a[1].ns)).slice(0, 30))
  console.log(
    `${(Number(s.ns) / 1e3 / n).toFixed(1).padStart(7)} us/req ${(s.n / n).toFixed(2).padStart(5)}x  ${(Number(s.ns) / 1e3 / s.n).toFixed(1).padStart(6)} us each  ${sql.slice(0, 150).replace(/\s+/g, ' ')}`,
  );
await app.close();
if (process.env.PROBE_KEEP) console.log('kept', dir);
else fs.rmSync(dir, { recursive: true, force: true });
