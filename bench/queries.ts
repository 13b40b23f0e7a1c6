// Lists the SQL statements one request runs through the real pipeline (the knex `query` event),
// for GET /api/v3/users/{id} and POST /api/v3/users, after a warm-up request of each.
//   npx tsx bench/queries.ts
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-q-'));
const app = await createApp(
  loadConfig({
    DATABASE_URL: `sqlite:${path.join(dir, 'q.db')}`,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_SOURCE: '100000000',
    RATE_LIMIT_ACCOUNT: '100000000',
    RATE_LIMIT_CREDENTIAL: '100000000',
  }),
);
const port = await app.listen(0, '127.0.0.1');
const { id: accountId } = await app.services.accounts.createAccount({ name: 'Q' });
const { secret } = await app.services.accounts.createRootCredential({
  accountId,
  permissions: ['*'],
});

let log: string[] | null = null;
app.db.on('query', (q: { sql: string }) => log?.push(q.sql));

let n = 0;
async function call(method: string, p: string, body?: unknown) {
  const headers: Record<string, string> = { authorization: `Bearer ${secret}` };
  if (method === 'POST') {
    headers['idempotency-key'] = `q-${++n}`;
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(`http://127.0.0.1:${port}${p}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const create = (i: number) => call('POST', '/api/v3/users', { name: 'U', email: `u${i}@e.com` });
const first = await create(0);
const id = first.body.data.id;
await call('GET', `/api/v3/users/${id}`);

for (const [label, run] of [
  ['GET /api/v3/users/{id}', () => call('GET', `/api/v3/users/${id}`)],
  ['POST /api/v3/users', () => create(1)],
] as const) {
  log = [];
  const res = await run();
  // The audit insert runs after the response is written; give it a moment to be logged.
  await new Promise((r) => setTimeout(r, 50));
  console.log(`\n${label} -> ${res.status}: ${log.length} statements`);
  for (const sql of log) console.log(`  ${sql}`);
  log = null;
}

await app.close();
fs.rmSync(dir, { recursive: true, force: true });
