// GET /api/v1/usuario over many students: walks every page (150 students each) through
// paginator.next_page_url on the real server, then asks for the first and the last page again
// and again. Keyset pages cost the same wherever they are; OFFSET pages would cost more the
// further they are (the last page would read every row before it).
// Prints one JSON line on stdout:
//   {"engine","students","pages","walkMs","firstPageMs","lastPageMs","lastOverFirst"}
//   (page times: medians of REPEATS requests, in ms)
//
//   node bench/v1-pages.ts [database=sqlite] [students=100000]
// database: `sqlite` (a fresh file in a temporary folder) or a postgres:// URL (a `bench_<random>`
// schema made and dropped here). Students are inserted in bulk, not through the API: only the
// reads are measured.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createDb } from '../src/db/knex.ts';
import { createLogger } from '../src/log.ts';
import { randomBase62 } from '../src/domain/shared/ids.ts';
import { createBenchSchema, type BenchSchema } from './pg-schema.ts';

const database = process.argv[2] ?? 'sqlite';
const STUDENTS = Number(process.argv[3] ?? 100_000);
const REPEATS = 30;
if (!Number.isInteger(STUDENTS) || STUDENTS < 1) throw new Error('students: a positive integer');
const postgres = database.startsWith('postgres://') || database.startsWith('postgresql://');
if (!postgres && database !== 'sqlite') throw new Error('database: `sqlite` or a postgres:// URL');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-v1-'));
const own: BenchSchema | null = postgres ? await createBenchSchema(database) : null;
const config = loadConfig({
  DATABASE_URL: postgres ? database : `sqlite:${path.join(dir, 'v1.db')}`,
  DATABASE_SCHEMA: own?.schema,
  FILES_DIR: path.join(dir, 'files'),
  SECRETS_KEY: crypto.randomBytes(32).toString('base64url'),
  LOG_LEVEL: 'silent',
  PORT: '0',
  RATE_LIMIT_SOURCE: '100000000',
  RATE_LIMIT_ACCOUNT: '100000000',
});
const db = createDb(config.databaseUrl, { schema: config.databaseSchema });
const app = await createApp(config, { db, logger: createLogger('silent') });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (n: number) => Math.round(n * 1000) / 1000;

try {
  const port = await app.listen(0, '127.0.0.1');
  const base = `http://127.0.0.1:${port}`;
  const { id: accountId } = await app.services.accounts.createAccount({ name: 'Bench school' });
  const { key } = await app.services.accounts.createLegacyKey(accountId);

  const now = new Date().toISOString();
  const utm = JSON.stringify({});
  const rows = Array.from({ length: STUDENTS }, (_, i) => ({
    account_id: accountId,
    name: `Aluno ${i}`,
    email: `aluno${i}@bench.example`,
    email_lower: `aluno${i}@bench.example`,
    free: false,
    points: 0,
    auto_login_token: randomBase62(32),
    utm,
    revision: crypto.randomBytes(8).toString('hex'),
    created_at: now,
    updated_at: now,
  }));
  // SQLite caps a compound INSERT ... SELECT at 500 terms.
  await db.batchInsert('users', rows, 200);
  // Statistics, as autovacuum would gather them on a table this size: without them PostgreSQL
  // guesses a handful of rows per account and sorts the whole account for every page.
  if (postgres) await db.raw('ANALYZE users');

  // The server answers with its PUBLIC_BASE_URL; requests go to the port it listens on.
  const local = (url: string) => base + new URL(url).pathname + new URL(url).search;
  async function page(url: string): Promise<{ ms: number; body: any }> {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: key } });
    const body = await res.json();
    const ms = performance.now() - started;
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`);
    return { ms, body };
  }

  const walkStarted = performance.now();
  let url: string | null = `${base}/api/v1/usuario`;
  let pages = 0;
  let lastUrl = url;
  let seen = 0;
  while (url) {
    const { body } = await page(url);
    pages++;
    seen += body.data.usuario.length;
    lastUrl = url;
    const next: string | null = body.data.paginator.next_page_url;
    url = next === null ? null : local(next);
  }
  const walkMs = performance.now() - walkStarted;
  if (seen !== STUDENTS) throw new Error(`walked ${seen} students, expected ${STUDENTS}`);

  const first: number[] = [];
  const last: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    first.push((await page(`${base}/api/v1/usuario`)).ms);
    last.push((await page(lastUrl)).ms);
  }
  const result = {
    engine: postgres ? 'postgres' : 'sqlite',
    students: STUDENTS,
    pages,
    walkMs: Math.round(walkMs),
    firstPageMs: round(median(first)),
    lastPageMs: round(median(last)),
    lastOverFirst: round(median(last) / median(first)),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await app.close();
  await own?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
