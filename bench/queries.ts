// Statements per request on PostgreSQL (issue #20): boots the app on a fresh schema of the given
// URL, warms it up, then sends GET /api/v3/users/{id} and POST /api/v3/users a few times each and
// prints every statement knex sent during each request (knex's `query` event; statements of
// timers that fire meanwhile show up too, marked by when they ran). Then, under load (50
// connections of GET for 5 s, 10 of POST), the statements per request by kind: what concurrent
// requests share (the credential version check, the group-written audit entries) shows there.
//   node bench/queries.ts postgres://school:school@127.0.0.1:5432/school_h1
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createDb } from '../src/db/knex.ts';
import { roundTrips } from '../src/db/pg-pipeline.ts';
import { createBenchSchema } from './pg-schema.ts';

// autocannon: CommonJS without bundled types (scripts/bench.ts types the part it uses).
const autocannon = createRequire(import.meta.url)('autocannon') as (o: object) => Promise<any>;
const url = process.argv[2] ?? process.env.TEST_DATABASE_URL;
if (!url) throw new Error('usage: bench/queries.ts postgres://...');
const bench = await createBenchSchema(url);
const config = loadConfig({
  DATABASE_URL: url,
  DATABASE_SCHEMA: bench.schema,
  LOG_LEVEL: 'silent',
  WORKERS: 'false',
  SECRETS_KEY: crypto.randomBytes(32).toString('base64url'),
  FILES_DIR: '/tmp/queries-files',
  // The load below must not meet the rate limits.
  RATE_LIMIT_SOURCE: '100000000',
  RATE_LIMIT_ACCOUNT: '100000000',
  RATE_LIMIT_CREDENTIAL: '100000000',
});
const db = createDb(url, { schema: bench.schema });
const app = await createApp(config, { db });
const port = await app.listen(0, '127.0.0.1');
const { id: accountId } = await app.services.accounts.createAccount({ name: 'Q' });
const { secret } = await app.services.accounts.createRootCredential({
  accountId,
  permissions: ['*'],
});
let seen: string[] = [];
db.on('query', (q: { sql: string }) => seen.push(q.sql.replace(/\s+/g, ' ').slice(0, 160)));
const base = `http://127.0.0.1:${port}/api/v3`;
let n = 0;
async function call(method: string, path: string, body?: object) {
  const res = await fetch(base + path, {
    method,
    headers: {
      authorization: `Bearer ${secret}`,
      'content-type': 'application/json',
      ...(method === 'POST' ? { 'idempotency-key': `q-${++n}` } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as any };
}
const created = await call('POST', '/users', { name: 'Ana', email: 'ana@example.com' });
const id = created.body.data?.id ?? created.body.id;
for (const [method, path, body] of [
  ['GET', `/users/${id}`],
  ['GET', `/users/${id}`],
  ['POST', '/users', { name: 'Bia', email: 'bia@example.com' }],
  ['POST', '/users', { name: 'Caio', email: 'caio@example.com' }],
] as [string, string, object?][]) {
  seen = [];
  const trips = roundTrips();
  const { status } = await call(method, path, body);
  await new Promise((r) => setTimeout(r, 20));
  const sent = roundTrips() - trips;
  console.log(`\n${method} ${path} -> ${status}: ${seen.length} statements, ${sent} round trips`);
  for (const s of seen) console.log('  ' + s);
}

/** Statements per request, by their first 60 characters, over `seconds` of load. */
async function underLoad(method: 'GET' | 'POST', path: string, connections: number) {
  const counts = new Map<string, number>();
  let on = false;
  const count = (q: { sql: string }) => {
    if (!on) return;
    const key = q.sql.replace(/\s+/g, ' ').slice(0, 60);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  };
  db.on('query', count);
  let n = 0;
  const options = {
    url: base + path,
    method,
    connections,
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    // POST: a fresh Idempotency-Key and email for every request.
    requests:
      method === 'POST'
        ? [
            {
              setupRequest: (req: any) => ({
                ...req,
                headers: { ...req.headers, 'idempotency-key': `load-${++n}` },
                body: JSON.stringify({ name: 'Load', email: `load${n}@example.com` }),
              }),
            },
          ]
        : undefined,
  };
  await autocannon({ ...options, duration: 1 });
  on = true;
  const trips = roundTrips();
  const r = await autocannon({ ...options, duration: 5 });
  on = false;
  db.off('query', count);
  const total = r['2xx'];
  // BEGIN and COMMIT travel with a statement (src/db/pg-pipeline.ts): fewer trips than statements.
  const perRequest = ((roundTrips() - trips) / total).toFixed(2);
  console.log(
    `\n${method} ${path} under load (${connections} connections): ${total} answered, ${perRequest} round trips each`,
  );
  for (const [sql, k] of [...counts].sort((a, b) => b[1] - a[1]))
    console.log(`  ${(k / total).toFixed(3)} per request  ${sql}`);
}
await underLoad('GET', `/users/${id}`, 50);
await underLoad('POST', '/users', 10);
await app.close();
await bench.drop();
