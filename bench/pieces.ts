// CPU cost of each piece of the v3 pipeline, called directly on a booted app (createApp, SQLite
// WAL), one call at a time: what a request pays for each step before any queueing under load.
//   node bench/pieces.ts [iterations=5000]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp, loadSpec } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { systemClock } from '../src/clock.ts';
import { CursorCodec } from '../src/db/cursor.ts';
import { newRequestId } from '../src/domain/shared/ids.ts';
import { requestHash } from '../src/domain/idempotency/service.ts';
import { UsersService } from '../src/domain/users/service.ts';
import { transaction } from '../src/db/tx.ts';
import { buildCatalog } from '../src/http/v3/catalog.ts';
import { V3Router } from '../src/http/v3/router.ts';

const N = Number(process.argv[2] ?? 5000);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-p-'));
const app = await createApp(
  loadConfig({
    DATABASE_URL: `sqlite:${path.join(dir, 'p.db')}`,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_SOURCE: '100000000',
    RATE_LIMIT_ACCOUNT: '100000000',
    RATE_LIMIT_CREDENTIAL: '100000000',
  }),
);
const { db, services } = app;
const { id: accountId } = await services.accounts.createAccount({ name: 'P' });
const { id: credentialId, secret } = await services.accounts.createRootCredential({
  accountId,
  permissions: ['*'],
});
const users = new UsersService(db, systemClock, new CursorCodec(Buffer.alloc(32, 7), systemClock));
const seed = await users.create(accountId, { name: 'Seed', email: 'seed@example.com' });
const catalog = buildCatalog(loadSpec());
const router = new V3Router(catalog);
const getOp = router.find('GET', `/api/v3/users/${seed.id}`)!.op;

async function cost(label: string, fn: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < Math.min(N, 1000); i++) await fn(-1 - i); // warm-up
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await fn(i);
  const wall = ((performance.now() - t0) * 1000) / N;
  const c = process.cpuUsage(c0);
  const cpu = (c.user + c.system) / N;
  console.log(
    `${cpu.toFixed(1).padStart(8)} µs CPU ${wall.toFixed(1).padStart(8)} µs wall  ${label}`,
  );
  return cpu;
}

const audit = (i: number) => ({
  requestId: newRequestId(),
  accountId,
  credentialId,
  adminId: null,
  method: 'GET',
  route: '/users/{user_id}',
  operationId: 'getUser',
  path: `/api/v3/users/${i}`,
  status: 200,
  durationMs: 1,
  ip: '127.0.0.1',
  createdAt: new Date().toISOString(),
});

console.log(`${N} sequential calls each\n\nknex baseline:`);
await cost("db.raw('select 1')", () => db.raw('select 1'));
await cost('db.transaction(empty): BEGIN + COMMIT', () => db.transaction(async () => undefined));

console.log('\nGET /users/{id} pieces:');
// As in the pipeline: the credential read on this request, after an earlier request touched it.
await services.credentials.touch((await services.credentials.findBySecret(secret))!.credential);
const found = (await services.credentials.findBySecret(secret))!;
const routing = await cost('V3Router.find', () => router.find('GET', `/api/v3/users/${seed.id}`));
const validate = await cost('validatePath (Ajv)', () =>
  getOp.validatePath({ user_id: String(seed.id) }),
);
const auth = await cost('credentials.findBySecret (auth lookup)', () =>
  services.credentials.findBySecret(secret),
);
const limits = await cost('rateLimits.consume x3 (source, account, credential)', async () => {
  await services.rateLimits.consume('source', '127.0.0.1');
  await services.rateLimits.consume('account', String(accountId));
  await services.rateLimits.consume('credential', String(credentialId));
});
const touch = await cost('credentials.touch (no-op within a minute)', () =>
  services.credentials.touch(found.credential),
);
const get = await cost('UsersService.get (the handler query)', () => users.get(accountId, seed.id));
const auditCost = await cost('audit.record (autocommit insert)', (i) =>
  services.audit.record(audit(i)),
);
const common = auth + limits + touch + auditCost;
const total = routing + validate + common + get;
console.log(`${total.toFixed(1).padStart(8)} µs CPU  sum of the GET pieces above`);

console.log('\nPOST /users pieces (besides auth, limits and audit above):');
let post = 0;
post += await cost('requestHash (sha256 of canonical body)', (i) =>
  requestHash('POST', '/api/v3/users', { name: 'U', email: `u${i}@e.com` }),
);
const tokens: string[] = [];
post += await cost('idempotency.reserve (SQLite: in-memory lock + lookup)', async (i) => {
  const r = await services.idempotency.reserve(credentialId, `k-${i}`, 'h'.repeat(64));
  if (r.kind === 'execute') tokens[i] = r.token;
});
post += await cost('transaction: users.create + idempotency.complete (one per commit)', (i) =>
  transaction(db, async (tx) => {
    const u = await users.create(accountId, { name: 'U', email: `p${i}@example.com` }, { tx });
    await services.idempotency.complete({ tx }, credentialId, `k-${i}`, tokens[i]!, {
      status: 201,
      headers: {},
      body: JSON.stringify(u),
      replayable: true,
    });
  }).finally(() => services.idempotency.settle(credentialId, `k-${i}`, tokens[i]!)),
);
console.log(`${post.toFixed(1).padStart(8)} µs CPU  sum of the POST-only pieces`);
console.log(
  `${(post + common + routing).toFixed(1).padStart(8)} µs CPU  POST total with auth, limits, audit`,
);

await app.close();
fs.rmSync(dir, { recursive: true, force: true });
