// What the statements around a PostgreSQL POST /users cost (issue #20), each kind run N times on
// one connection of a fresh schema: the backend's CPU per run (from /proc, 10 ms ticks over N
// runs) and the wall time per run, one run at a time as a request sends them. The idempotency
// part of a POST as it was (its claim committed alone, the result an UPDATE in the request's
// transaction) and as it is (the claim and a savepoint in the transaction's first round trip,
// the completed record with its COMMIT).
//   node bench/pg-statements.ts postgres://school:school@127.0.0.1:5432/school_h1 [N]
import pg from 'pg';
import { createDb } from '../src/db/knex.ts';
import { migrate } from '../src/db/migrate.ts';
import { pipeline } from '../src/db/pg-pipeline.ts';
import { pidCpuMs } from '../scripts/proc-cpu.ts';
import { createBenchSchema } from './pg-schema.ts';

const url = process.argv[2] ?? process.env.TEST_DATABASE_URL;
if (!url) throw new Error('usage: bench/pg-statements.ts postgres://... [N]');
const N = Number(process.argv[3] ?? 2000);
const bench = await createBenchSchema(url);
const db = createDb(url, { schema: bench.schema });
await migrate(db);
await db.destroy();
const c = new pg.Client({ connectionString: url, options: `-c search_path=${bench.schema}` });
await c.connect();
const pid: number = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;

let n = 0;
const now = new Date().toISOString();
const claimRow = (k: string) => [1, k, 'h'.repeat(64), `o:${k}`, now, now];
const CLAIM_INSERT =
  'INSERT INTO idempotency_keys (credential_id, key, request_hash, state, owner, locked_at, created_at) ' +
  "VALUES ($1, $2, $3, 'in_progress', $4, $5, $6)";
const RESULT_UPDATE =
  "UPDATE idempotency_keys SET state = 'completed', response_status = $1, response_headers = $2, " +
  "response_body = $3, replayable = $4 WHERE credential_id = $5 AND key = $6 AND owner = $7 AND state = 'in_progress'";
const CLAIM_FN = 'SELECT held, same_body, record FROM idempotency_claim($1, $2, $3, $4)';
const RECORD_INSERT =
  'INSERT INTO idempotency_keys (credential_id, key, request_hash, state, owner, locked_at, created_at, ' +
  "response_status, response_headers, response_body, replayable) VALUES ($1, $2, $3, 'completed', $4, $5, $6, $7, $8, $9, $10)";
const body = JSON.stringify({ data: { id: '1', object: 'user', name: 'Load', email: 'l@x.com' } });
const result = (k: string) => [...claimRow(k), 201, '{}', body, true];
const audit = (k: string) => ({
  request_id: `req_${k}`,
  account_id: 1,
  credential_id: 1,
  admin_id: null,
  method: 'POST',
  route: '/users',
  operation_id: 'createUser',
  path: '/api/v3/users',
  status: 201,
  duration_ms: 3,
  ip: '127.0.0.1',
  created_at: now,
});
const cols = Object.keys(audit('x'));
const AUDIT_VALUES = `insert into "audit_entries" (${cols.map((x) => `"${x}"`).join(', ')}) values (${cols.map((_, i) => `$${i + 1}`).join(', ')})`;
const AUDIT_JSON =
  `INSERT INTO audit_entries (${cols.join(', ')}) SELECT * FROM json_to_recordset($1::json) AS v(` +
  'request_id text, account_id integer, credential_id integer, admin_id integer, method text, route text, ' +
  'operation_id text, path text, status integer, duration_ms integer, ip text, created_at text)';

const cases: [string, number, number, (k: string) => Promise<unknown>][] = [
  // [label, round trips, commits, one run]
  [
    'auth version read, unnamed (knex raw)',
    1,
    0,
    () => c.query('SELECT version FROM auth_version WHERE id = 1'),
  ],
  [
    'auth version read, named',
    1,
    0,
    () => c.query({ name: 'v', text: 'SELECT version FROM auth_version WHERE id = 1' }),
  ],
  [
    'BEGIN, COMMIT of an empty transaction',
    2,
    0,
    async () => {
      await c.query('BEGIN');
      await c.query('COMMIT');
    },
  ],
  [
    'audit entry, knex VALUES (unnamed)',
    1,
    1,
    (k) => c.query(AUDIT_VALUES, Object.values(audit(k))),
  ],
  [
    'audit entry, named JSON insert',
    1,
    1,
    (k) => c.query({ name: 'a', text: AUDIT_JSON, values: [JSON.stringify([audit(k)])] }),
  ],
  [
    'before: claim INSERT (own commit)',
    1,
    1,
    (k) => c.query({ name: 'c', text: CLAIM_INSERT, values: claimRow(k) }),
  ],
  [
    'before: claim; BEGIN; result UPDATE; COMMIT',
    4,
    2,
    async (k) => {
      await c.query({ name: 'c', text: CLAIM_INSERT, values: claimRow(k) });
      await c.query('BEGIN');
      await c.query({
        name: 'u',
        text: RESULT_UPDATE,
        values: [201, '{}', body, true, 1, k, `o:${k}`],
      });
      await c.query('COMMIT');
    },
  ],
  [
    'after, unfolded: BEGIN; claim; SAVEPOINT; record; COMMIT',
    5,
    1,
    async (k) => {
      await c.query('BEGIN');
      await c.query({ name: 'f', text: CLAIM_FN, values: [1, k, 'h'.repeat(64), '2000'] });
      await c.query('SAVEPOINT idempotency_claim');
      await c.query({ name: 'r', text: RECORD_INSERT, values: result(k) });
      await c.query('COMMIT');
    },
  ],
  [
    'after, unfolded, no savepoint: BEGIN; claim; record; COMMIT',
    4,
    1,
    async (k) => {
      await c.query('BEGIN');
      await c.query({ name: 'f', text: CLAIM_FN, values: [1, k, 'h'.repeat(64), '2000'] });
      await c.query({ name: 'r', text: RECORD_INSERT, values: result(k) });
      await c.query('COMMIT');
    },
  ],
  [
    'after: [BEGIN, claim, SAVEPOINT]; [record, COMMIT]',
    2,
    1,
    async (k) => {
      await pipeline(c, [
        { text: 'BEGIN' },
        { name: 'f', text: CLAIM_FN, values: [1, k, 'h'.repeat(64), '2000'] },
        { text: 'SAVEPOINT idempotency_claim' },
      ]);
      await pipeline(c, [
        { name: 'r', text: RECORD_INSERT, values: result(k) },
        { text: 'COMMIT' },
      ]);
    },
  ],
];

console.log(`${N} runs each, one connection, schema ${bench.schema}`);
console.log('| statements | round trips | commits | backend CPU us/run | wall us/run |');
console.log('| --- | --- | --- | --- | --- |');
for (const [label, trips, commits, once] of cases) {
  for (let i = 0; i < 100; i++) await once(`w${++n}`);
  const cpu = pidCpuMs(pid)!;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await once(`k${++n}`);
  const wall = ((performance.now() - t0) * 1000) / N;
  const backend = ((pidCpuMs(pid)! - cpu) * 1000) / N;
  console.log(`| ${label} | ${trips} | ${commits} | ${backend.toFixed(0)} | ${wall.toFixed(0)} |`);
}
await c.end();
await bench.drop();
