// The real server for npm run bench, in its own process so the load generator does not share its
// event loop. Boots createApp on a fresh database with limits out of reach and silent logs,
// creates an account, a root credential and one user, then prints one line on stdout:
//   BENCH_READY {"port","secret","userId","usersReady","probe","ablate","engine","workers"}
// then takes the commands of bench/child-control.ts on stdin, and stops when stdin closes or on
// SIGTERM/SIGINT (a normal exit, so --cpu-prof can write its profile).
//
// Environment (set by scripts/bench.ts; the server's own DATABASE_URL and WORKERS are not read,
// so a developer's settings never point the bench at a real database):
//   BENCH_APP_DATABASE_URL     a postgres:// URL to use instead of a fresh SQLite file; the
//   BENCH_APP_DATABASE_SCHEMA  schema in it (created, and dropped afterwards, by the caller)
//   BENCH_APP_POOL_MAX         DATABASE_POOL_MAX (the pg reference gets the same)
//   BENCH_APP_SECRETS_KEY      SECRETS_KEY (default: a random one), the same for two instances
//   BENCH_WORKERS=1            run the background workers in this process (app.startWorkers()
//                              after listen), as `npm start` does; off by default
//   BENCH_ABLATE               (comma-separated, for profiling only; the bench flags any run that
//                              uses it) swaps pieces of the pipeline for no-ops or prototypes:
//                              see bench/ablations.ts.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { serveControl } from '../bench/child-control.ts';
import { applyAblations } from '../bench/ablations.ts';

const BENCH_LIMIT = '100000000';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-'));
const pgUrl = process.env.BENCH_APP_DATABASE_URL || undefined;
const workers = process.env.BENCH_WORKERS === '1';
const config = loadConfig({
  HOST: '127.0.0.1',
  PORT: '0',
  DATABASE_URL: pgUrl ?? `sqlite:${path.join(dir, 'bench.db')}`,
  DATABASE_SCHEMA: pgUrl ? process.env.BENCH_APP_DATABASE_SCHEMA : undefined,
  DATABASE_POOL_MAX: process.env.BENCH_APP_POOL_MAX || undefined,
  // Nothing written outside `dir` (on PostgreSQL the data folder would be ./data).
  FILES_DIR: path.join(dir, 'files'),
  // Two instances on one schema must share it (the database records its fingerprint).
  SECRETS_KEY: process.env.BENCH_APP_SECRETS_KEY || crypto.randomBytes(32).toString('base64url'),
  LOG_LEVEL: 'silent',
  WORKERS: String(workers),
  RATE_LIMIT_SOURCE: BENCH_LIMIT,
  RATE_LIMIT_ACCOUNT: BENCH_LIMIT,
  RATE_LIMIT_CREDENTIAL: BENCH_LIMIT,
});
const app = await createApp(config);

const ablate = (process.env.BENCH_ABLATE ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
await applyAblations(app, ablate, Number(BENCH_LIMIT));

const port = await app.listen(0, '127.0.0.1');
// As `npm start` does (src/main.ts): the contract's validators compiled before the first request,
// not inside the bench's warm-up (nor in a CPU profile's first seconds).
await app.warm();
if (workers) await app.startWorkers();
const { id: accountId } = await app.services.accounts.createAccount({ name: 'Bench school' });
const { secret } = await app.services.accounts.createRootCredential({
  accountId,
  name: 'Bench root',
  permissions: ['*'],
});

// One user to read, created through the API; this doubles as the "are users implemented?" probe.
const res = await fetch(`http://127.0.0.1:${port}/api/v3/users`, {
  method: 'POST',
  headers: {
    authorization: `Bearer ${secret}`,
    'content-type': 'application/json',
    'idempotency-key': `bench-seed-${process.pid}`,
  },
  body: JSON.stringify({ name: 'Ana Souza', email: 'ana@example.com' }),
});
const body: any = await res.json().catch(() => null);
const created = body?.data ?? body;
const usersReady = res.status === 201 && created?.id != null;
const userId: string | null = usersReady ? String(created.id) : null;
const probe = { status: res.status, code: body?.error?.code ?? null };

process.stdout.write(
  `BENCH_READY ${JSON.stringify({
    port,
    secret,
    userId,
    usersReady,
    probe,
    ablate,
    engine: pgUrl ? 'postgres' : 'sqlite',
    workers,
  })}\n`,
);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  app.server.closeAllConnections();
  await app.close();
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
serveControl(() => void stop());
