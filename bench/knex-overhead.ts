// What one statement costs through knex vs. better-sqlite3 directly, on the app's own schema
// (migrated by createApp) with the queries the v3 pipeline runs on every request. Sequential, one
// at a time, so the figure is CPU per statement (promise hops included), not throughput under load.
//   node bench/knex-overhead.ts
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { hashSecret } from '../src/domain/credentials/secrets.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-k-'));
const app = await createApp(
  loadConfig({ DATABASE_URL: `sqlite:${path.join(dir, 'k.db')}`, LOG_LEVEL: 'silent' }),
);
const { id: accountId } = await app.services.accounts.createAccount({ name: 'K' });
const { secret } = await app.services.accounts.createRootCredential({
  accountId,
  permissions: ['*'],
});
const hash = hashSecret(secret);
const db = app.db;
// knex's own better-sqlite3 connection (pool of one): the same handle the app uses.
const raw: any = await db.client.acquireConnection();
await db.client.releaseConnection(raw);

async function time(label: string, n: number, fn: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < Math.min(n, 2000); i++) await fn(i); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  const us = Number(process.hrtime.bigint() - start) / n / 1000;
  console.log(`${us.toFixed(1).padStart(8)} µs  ${label}`);
  return us;
}

const authSql =
  'select c.*, a.sandbox as account_sandbox, a.status as account_status from credentials as c ' +
  'inner join accounts as a on a.id = c.account_id where c.secret_hash = ? limit 1';
const authStmt = raw.prepare(authSql);
const auditRow = (i: number) => ({
  request_id: `req_${i}_${Math.random()}`,
  account_id: accountId,
  credential_id: 1,
  admin_id: null,
  method: 'GET',
  route: '/users/{user_id}',
  operation_id: 'getUser',
  path: '/api/v3/users/1',
  status: 200,
  duration_ms: 1,
  ip: '127.0.0.1',
  created_at: new Date().toISOString(),
});
const auditSql =
  'insert into audit_entries (request_id, account_id, credential_id, admin_id, method, route, ' +
  'operation_id, path, status, duration_ms, ip, created_at) values (@request_id, @account_id, ' +
  '@credential_id, @admin_id, @method, @route, @operation_id, @path, @status, @duration_ms, @ip, @created_at)';
const auditStmt = raw.prepare(auditSql);

const N = 10_000;
console.log('Credential lookup (the authentication query, every request):');
const kAuth = await time('knex query builder (as credentialsRepo.findBySecretHash)', N, () =>
  db('credentials as c')
    .join('accounts as a', 'a.id', 'c.account_id')
    .where('c.secret_hash', hash)
    .first('c.*', 'a.sandbox as account_sandbox', 'a.status as account_status'),
);
await time('knex.raw (same SQL, no builder)', N, () => db.raw(authSql, [hash]));
await time('better-sqlite3, prepare on every call (what knex does)', N, () =>
  raw.prepare(authSql).get(hash),
);
const rAuth = await time('better-sqlite3, statement prepared once', N, () => authStmt.get(hash));

console.log('\nUser by primary key (GET /users/{id} handler):');
const { id: userId } = await db('users')
  .insert({
    account_id: accountId,
    name: 'U',
    email: 'u@example.com',
    email_lower: 'u@example.com',
    auto_login_token: 't',
    utm: '{}',
    revision: 'r',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
  })
  .returning('id')
  .then((rows: any[]) => rows[0]);
const userStmt = raw.prepare('select * from users where account_id = ? and id = ? limit 1');
const kUser = await time('knex query builder (as usersRepo.get)', N, () =>
  db('users').where({ account_id: accountId, id: userId }).first(),
);
const rUser = await time('better-sqlite3, statement prepared once', N, () =>
  userStmt.get(accountId, userId),
);

console.log('\nAudit insert (every request):');
const kAudit = await time('knex query builder, autocommit (as auditRepo.insert)', N, (i) =>
  db('audit_entries').insert(auditRow(i)),
);
const rAudit = await time(
  'better-sqlite3, prepared once, autocommit (one WAL commit each)',
  N,
  (i) => auditStmt.run(auditRow(N + i)),
);
const batch = raw.transaction((rows: unknown[]) => {
  for (const r of rows) auditStmt.run(r);
});
const B = 50;
const rBatch =
  (await time(
    `better-sqlite3, prepared once, ${B} rows per commit (group commit), per batch`,
    N / B,
    (i) => batch(Array.from({ length: B }, (_, j) => auditRow(3 * N + i * B + j))),
  )) / B;
console.log(`${rBatch.toFixed(1).padStart(8)} µs  ... per row`);

console.log('\nTransaction overhead (POST runs one per request):');
const kTx = await time('knex db.transaction(async () => {}): BEGIN + COMMIT', N, () =>
  db.transaction(async () => undefined),
);
const begin = raw.prepare('BEGIN');
const commit = raw.prepare('COMMIT');
const rTx = await time('better-sqlite3 BEGIN + COMMIT, prepared', N, () => {
  begin.run();
  commit.run();
});

console.log(
  `\nPer request, knex costs over prepared better-sqlite3: lookup ~${(kAuth - rAuth).toFixed(0)} µs, ` +
    `user read ~${(kUser - rUser).toFixed(0)} µs, audit insert ~${(kAudit - rAudit).toFixed(0)} µs, ` +
    `transaction ~${(kTx - rTx).toFixed(0)} µs. A WAL commit costs ~${(rAudit - rBatch).toFixed(0)} µs ` +
    `(autocommit insert minus a group-committed one).`,
);
await app.close();
fs.rmSync(dir, { recursive: true, force: true });
