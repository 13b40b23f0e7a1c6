// npm run bench: throughput and p99 latency of the real server against a bare reference server,
// the time a batch operation takes from POST to succeeded, the job engine's enqueue-to-start
// latency, and a routing check. One round measures, sequentially, each against a fresh child process:
//   1. reference  GET /users/:id       Koa + @koa/router + better-sqlite3 (scripts/bench-reference.ts)
//   2. app        GET /api/v3/users/{id}  the full v3 pipeline (scripts/bench-server.ts)
//      (1 and 2 at BENCH_CONNECTIONS)
//   3. reference  POST /users          the same bare server: parse the body, one INSERT, 201
//   3b. reference POST /users          bare Koa + better-sqlite3 on the app's schema doing the
//                 durable writes the app must do (student, event, idempotency record, audit entry,
//                 one transaction): scripts/bench-reference-durable.ts; the POST target (>= 0.7)
//   4. app        POST /api/v3/users   full pipeline
//      (3 and 4 at BENCH_POST_CONNECTIONS, the same requests: a unique Idempotency-Key and email each)
//   4b. the same four on PostgreSQL when one is configured (BENCH_DATABASE_URL): reference
//                 GET/POST against bare Koa + @koa/router + `pg` (scripts/bench-reference-pg.ts,
//                 a pool of BENCH_POOL_MAX connections) and the app with DATABASE_POOL_MAX the same,
//                 each child in a fresh schema; and a durable-writes POST reference on PostgreSQL
//                 (scripts/bench-reference-durable-pg.ts: the app's four rows in one transaction),
//                 shown beside the target's bare insert, without a target of its own
//   4c. two app instances on one PostgreSQL schema, GET and POST, half the connections each
//                 (two autocannons: the round-robin), with the scale factor against one instance
//   5. batch      POST /api/v3/operations/batches, a users.upsert of 1,000 items, polled every 5 ms
//                 until succeeded, on an app child running its background workers; on SQLite, and
//                 on PostgreSQL too when one is configured (BENCH_DATABASE_URL)
//   6. jobs       bench/job-latency.ts: the job engine's enqueue-to-start latency, SQLite (and
//                 PostgreSQL)
// and once per run (not per round), each in its own process:
//   7. webhooks   bench/webhooks.ts: event-to-delivery latency and deliveries/s to a local receiver
//   7b. streams   bench/streams.ts: events/s fanned out to 20 open streams of one account, with
//                 commit-to-arrival p50/p99, SQLite (and PostgreSQL)
//   8. v1pages    bench/v1-pages.ts: GET /api/v1/usuario walked over 100,000 students, last page
//                 against first
//   9. audit      bench/audit-bytes.ts: bytes of audit trail kept per request
//  10. files      bench/files.ts: a 256 MiB upload through the part URLs and its download, MB/s
//                 and peak RSS, on local disk and on S3 (an s3rver emulator)
//  11. imports    bench/imports.ts: a 1,000- and a 100,000-row import (analysis + processing) and
//                 export of the users it created, rows/s and peak RSS each (flat memory target)
//  12. plans      bench/plans.ts: POST /plans of a 500-resource manifest, on an empty account and
//                 once applied (target: under 1 s on SQLite)
//  13. grants     bench/grants.ts: a 1,000-item enrollments.grant batch, creating then renewing,
//                 items/s (set-based chunks on PostgreSQL)
// A run is BENCH_ROUNDS rounds; it prints each round, the median round of each phase, the
// app/reference ratios (the median of each round's ratio: a shared virtual machine's speed drifts
// by tens of percent within minutes, and phases measured side by side drift together) and
// PASS/MISS per target. Each load phase is one autocannon run: a warm-up, then the measured window
// (see measure()). Non-2xx responses and socket
// errors are counted and reported loudly; so is CPU used by other processes during a window. It is
// a measurement, not a test: it exits 0 whatever the figures, non-zero only when something crashed
// (a batch that ends in any state but succeeded is such a crash).
// Profiling helpers live in bench/ (README there).
//
// Environment:
//   BENCH_ROUNDS            rounds (default 5: the GET target is judged on the median of 5)
//   BENCH_SECONDS           measured seconds per load phase and round (default 8)
//   BENCH_CONNECTIONS       concurrent connections of the GET phases (default 50)
//   BENCH_POST_CONNECTIONS  concurrent connections of the POST phases (default 10)
//   BENCH_WARMUP            warm-up seconds per load phase, not measured (default 2)
//   BENCH_BATCHES           measured batches per round and engine, after one warm-up batch (default 3)
//   BENCH_JOBS              jobs per round and engine in the jobs phase, after 20 warm-up (default 200)
//   BENCH_ONLY              comma-separated subset of: routing, webhooks, streams, v1pages, files, reference (= reference-get,
//                           reference-post and reference-post-durable), reference-get, get, reference-post,
//                           reference-post-durable, post, batch, jobs,
//                           audit, imports, plans, grants, pg-reference (= pg-reference-get, pg-reference-post and
//                           pg-reference-post-durable),
//                           pg-get, pg-post, pg-get-2, pg-post-2 (two instances on one schema)
//   BENCH_POOL_MAX          PostgreSQL connections of the app and of the pg reference (default 10)
//   BENCH_DATABASE_URL      a postgres:// URL: the GET, POST, batch and jobs phases also run on PostgreSQL, each
//                           child in a fresh schema `bench_<random>` (dropped afterwards, with the
//                           job queue's `<schema>_jobs`). Default: TEST_DATABASE_URL when it is a
//                           postgres:// URL; `off` for SQLite only
//   BENCH_CPU_PROF          a directory: server children run with --cpu-prof and write their
//                           profiles to DIR/<phase>/ (the main thread's is the largest; summarise it
//                           with `node bench/profile-summary.ts FILE`)
//   BENCH_ABLATE            no-ops / prototypes swapped into the app server (bench/ablations.ts);
//                           profiling only, and every such run says so
//   BENCH_IMPORT_ROWS       the imports phase's sizes, comma-separated (default 1000,100000: the
//                           flat-memory target compares those two)
//   BENCH_JSON              a file: the figures are also written there as JSON (bench/ablate.ts reads it)
//   BENCH_FALLBACK          `credentials`: while the users endpoints are not implemented, bench
//                           GET /credentials/current and POST /credentials instead (development only)
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { loadSpec } from '../src/app.ts';
import { buildCatalog, type Operation } from '../src/http/v3/catalog.ts';
import { V3Router } from '../src/http/v3/router.ts';
import type { ChildStats } from '../bench/child-control.ts';
import { benchPostgresUrl, createBenchSchema } from '../bench/pg-schema.ts';
import { loadBaseline, regressionRows } from '../bench/baseline.ts';
import { scriptNodeFlags } from '../bench/node-flags.ts';
import { backendCpuMs, PgBackendCpu } from '../bench/pg-backends.ts';
import { pidCpuMs } from './proc-cpu.ts';

// ---------------------------------------------------------------------------------------------
// Options

function numEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number`);
  return n;
}

const ROUNDS = Math.round(numEnv('BENCH_ROUNDS', 5));
const SECONDS = numEnv('BENCH_SECONDS', 8);
const CONNECTIONS = Math.round(numEnv('BENCH_CONNECTIONS', 50));
const POST_CONNECTIONS = Math.round(numEnv('BENCH_POST_CONNECTIONS', 10));
const WARMUP = numEnv('BENCH_WARMUP', 2);
const BATCHES = Math.round(numEnv('BENCH_BATCHES', 3));
const JOBS = Math.round(numEnv('BENCH_JOBS', 200));
const POOL_MAX = Math.round(numEnv('BENCH_POOL_MAX', 10));
const PHASES = [
  'routing',
  'reference-get',
  'get',
  'reference-post',
  'reference-post-durable',
  'post',
  'pg-reference-get',
  'pg-get',
  'pg-reference-post',
  'pg-reference-post-durable',
  'pg-post',
  'pg-get-2',
  'pg-post-2',
  'batch',
  'jobs',
  'webhooks',
  'streams',
  'v1pages',
  'audit',
  'files',
  'imports',
  'plans',
  'grants',
] as const;
type PhaseName = (typeof PHASES)[number];
const ONLY = new Set<PhaseName>(
  (
    process.env.BENCH_ONLY ||
    'routing,reference,get,post,pg-reference,pg-get,pg-post,pg-get-2,pg-post-2,batch,jobs,webhooks,streams,v1pages,audit,files,imports,plans,grants'
  )
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .flatMap((name): PhaseName[] => {
      if (name === 'reference')
        return ['reference-get', 'reference-post', 'reference-post-durable'];
      if (name === 'pg-reference')
        return ['pg-reference-get', 'pg-reference-post', 'pg-reference-post-durable'];
      if ((PHASES as readonly string[]).includes(name)) return [name as PhaseName];
      throw new Error(
        `BENCH_ONLY: unknown phase ${name} (phases: reference, ${PHASES.join(', ')})`,
      );
    }),
);
const PG_URL = benchPostgresUrl();
/** Rows of the imports phase's runs (BENCH_IMPORT_ROWS; the RSS target needs 1000 and 100000). */
const IMPORT_ROWS = (process.env.BENCH_IMPORT_ROWS ?? '1000,100000').split(',').map(Number);
const CPU_PROF = process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : null;
const FALLBACK = process.env.BENCH_FALLBACK === 'credentials';
const ABLATE = process.env.BENCH_ABLATE ?? '';

const TARGET_GET_RATIO = 0.5;
/** Of the bare insert: the floor, shown, no longer a target (issue #20 restated it). */
const TARGET_POST_RATIO = 0.5;
/** Of the reference doing the same durable writes (scripts/bench-reference-durable.ts). */
const TARGET_POST_DURABLE_RATIO = 0.7;
/** The GET ratio is judged on the median of at least this many rounds (single rounds move). */
const GET_MIN_ROUNDS = 5;
/** PostgreSQL app/pg reference ratios (issue #20). */
const TARGET_PG_GET_RATIO = 0.5;
const TARGET_PG_POST_RATIO = 0.3;
/** POST p99 at BENCH_POST_CONNECTIONS. */
const TARGET_P99_MS = 10;
/** A users.upsert batch of BATCH_ITEMS items, from POST to succeeded, on SQLite. */
const TARGET_BATCH_MS = 1000;
const BATCH_ITEMS = 1000;
/** A 1,000-item users.upsert batch on PostgreSQL, POST to succeeded (issue #20). */
const TARGET_PG_BATCH_ITEMS_PER_S = 2000;
const POLL_MS = 5;
const OTHER_CPU_WARN_PCT = 15;
const CORES = os.availableParallelism();

const root = path.resolve(import.meta.dirname, '..');

// ---------------------------------------------------------------------------------------------
// autocannon (CommonJS, no bundled types): the part of its API used here.

interface AcRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (req: AcRequest) => AcRequest;
}

interface AcOptions {
  url: string;
  connections: number;
  duration: number;
  pipelining?: number;
  timeout?: number;
  method?: string;
  headers?: Record<string, string>;
  requests?: AcRequest[];
}

interface AcInstance {
  on(
    event: 'response',
    fn: (client: unknown, status: number, bytes: number, latencyMs: number) => void,
  ): void;
  on(event: 'reqError', fn: (err: Error) => void): void;
}

type Autocannon = (opts: AcOptions, cb: (err: Error | null) => void) => AcInstance;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/** What one measured window saw, from autocannon's per-response events. */
interface Load {
  seconds: number;
  requests: number;
  rps: number;
  latency: { avg: number; p50: number; p90: number; p99: number; max: number };
  ok: number;
  non2xx: number;
  /** Socket errors and timeouts. */
  errors: number;
  statuses: Record<string, number>;
}

/** rps and status counts: every response completed in the window; latency: see measure(). */
function summarize(
  latencies: number[],
  completed: number,
  statuses: Map<number, number>,
  errors: number,
  ms: number,
): Load {
  const sorted = Float64Array.from(latencies).sort();
  const at = (q: number) =>
    sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : 0;
  let ok = 0;
  for (const [code, n] of statuses) if (code >= 200 && code < 300) ok += n;
  return {
    seconds: ms / 1000,
    requests: completed,
    rps: (completed * 1000) / ms,
    latency: {
      avg: sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1),
      p50: at(0.5),
      p90: at(0.9),
      p99: at(0.99),
      max: sorted.length ? sorted[sorted.length - 1]! : 0,
    },
    ok,
    non2xx: completed - ok,
    errors,
    statuses: Object.fromEntries([...statuses].sort((x, y) => x[0] - y[0])),
  };
}

// ---------------------------------------------------------------------------------------------
// Server children

interface Child<T> {
  info: T;
  pid: number;
  /** Several processes measured as one (two instances): their CPU is added up. */
  pids?: number[];
  /** Starts a measurement window in the child (see bench/child-control.ts). */
  reset(): void;
  stats(): Promise<ChildStats>;
  stop(): Promise<void>;
}

async function startChild<T>(script: string, profileName: string, env: NodeJS.ProcessEnv) {
  // Node strips the types itself, as `npm start` runs the server (and the bench/ tools), with the
  // V8 flags `npm start` gives it.
  const args: string[] = scriptNodeFlags('start');
  // One directory per phase: each process writes its profile there.
  if (CPU_PROF) args.push('--cpu-prof', `--cpu-prof-dir=${path.join(CPU_PROF, profileName)}`);
  args.push(path.join(root, 'scripts', script));
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

  let statsWaiter: ((s: ChildStats) => void) | null = null;
  const info = await new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script}: not ready after 60 s`)), 60_000);
    const lines = readline.createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (line.startsWith('BENCH_STATS ')) {
        statsWaiter?.(JSON.parse(line.slice('BENCH_STATS '.length)) as ChildStats);
        statsWaiter = null;
      } else if (line.startsWith('BENCH_READY ')) {
        clearTimeout(timer);
        resolve(JSON.parse(line.slice('BENCH_READY '.length)) as T);
      } else {
        process.stderr.write(`[${script}] ${line}\n`);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with code ${code} before it was ready`));
    });
  });

  return {
    info,
    pid: child.pid!,
    reset() {
      child.stdin!.write('reset\n');
    },
    stats() {
      return new Promise<ChildStats>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${script}: no stats after 10 s`)), 10_000);
        statsWaiter = (s) => {
          clearTimeout(timer);
          resolve(s);
        };
        child.stdin!.write('stats\n');
      });
    },
    async stop() {
      child.stdin!.end();
      const code = await Promise.race([
        exited,
        new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000)),
      ]);
      if (code === 'timeout') {
        child.kill('SIGKILL');
        throw new Error(`${script} did not stop within 15 s`);
      }
      if (code !== 0) throw new Error(`${script} exited with code ${code}`);
    },
  } satisfies Child<T>;
}

interface ReferenceInfo {
  port: number;
  userId: number;
}

interface AppInfo {
  port: number;
  secret: string;
  userId: string | null;
  usersReady: boolean;
  probe: { status: number; code: string | null };
  ablate: string[];
  engine: 'sqlite' | 'postgres';
  workers: boolean;
}

// ---------------------------------------------------------------------------------------------
// Load phases

interface CpuSample {
  wall: number;
  busy: number | null;
  steal: number | null;
  server: number | null;
  self: number;
}

interface CpuUse {
  /** Server process CPU as % of one core. */
  serverPct: number | null;
  /** Server CPU time per completed request, µs. */
  serverUsPerReq: number | null;
  /** CPU used by every other process on the machine (not the server, not this bench, not the
   * bench database's PostgreSQL backends), % of one core. */
  otherPct: number | null;
  /** The bench database's PostgreSQL backends (PG phases), % of one core; null elsewhere. */
  pgPct: number | null;
  /** Their CPU time per completed request, µs. */
  pgUsPerReq: number | null;
  /** Time the hypervisor gave this machine's cores to someone else, % of one core. */
  stealPct: number | null;
}

interface PhaseResult {
  label: string;
  connections: number;
  load: Load;
  cpu: CpuUse;
  stats: ChildStats;
}

/** Linux /proc accounting (busy including steal, and steal), in ms; null elsewhere. Jiffies are 10 ms (CLK_TCK 100). */
function procBusyMs(): { busy: number; steal: number } | null {
  try {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1);
    const [user, nice, system, , , irq, softirq, steal] = f.map(Number);
    const busy = user! + nice! + system! + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0);
    return { busy: busy * 10, steal: (steal ?? 0) * 10 };
  } catch {
    return null;
  }
}

function cpuSample(pids: number[]): CpuSample {
  const u = process.cpuUsage();
  const machine = procBusyMs();
  const each = pids.map((pid) => pidCpuMs(pid));
  return {
    wall: performance.now(),
    busy: machine?.busy ?? null,
    steal: machine?.steal ?? null,
    server: each.includes(null) ? null : each.reduce((a, b) => a! + b!, 0),
    self: (u.user + u.system) / 1000,
  };
}

function cpuUse(a: CpuSample, b: CpuSample, requests: number, pgMs: number | null = null): CpuUse {
  const wall = b.wall - a.wall;
  const server = a.server === null || b.server === null ? null : b.server - a.server;
  const busy = a.busy === null || b.busy === null ? null : b.busy - a.busy;
  return {
    serverPct: server === null ? null : (100 * server) / wall,
    serverUsPerReq: server === null || !requests ? null : (1000 * server) / requests,
    otherPct:
      busy === null || server === null
        ? null
        : Math.max(0, (100 * (busy - server - (pgMs ?? 0) - (b.self - a.self))) / wall),
    pgPct: pgMs === null ? null : (100 * pgMs) / wall,
    pgUsPerReq: pgMs === null || !requests ? null : (1000 * pgMs) / requests,
    stealPct: a.steal === null || b.steal === null ? null : (100 * (b.steal - a.steal)) / wall,
  };
}

/**
 * One continuous autocannon run of WARMUP + SECONDS on the same connections; the window is the
 * last SECONDS. Throughput and statuses count every response completed in the window; latency
 * counts the requests both sent and answered in it. Why: connections opened on a busy server
 * ramp up slowly (with async handlers, the first requests of new connections are admitted about
 * one per event-loop cycle, up to ~2 s for POST here), so a window opened on fresh connections, or
 * stragglers from the warm-up, would measure that ramp rather than the steady state.
 * `backends`: a PostgreSQL phase's database, whose backends' CPU is sampled with the window.
 */
async function measure(
  label: string,
  server: Child<unknown>,
  build: () => AcOptions | AcOptions[],
  backends?: PgBackendCpu,
): Promise<PhaseResult> {
  process.stderr.write(`  ${label}: warm-up ${WARMUP} s, then ${SECONDS} s measured...\n`);
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  let errors = 0;
  let completed = 0;
  let measuring = false;
  let before: CpuSample | null = null;
  let after: CpuSample | null = null;
  let windowStart = 0;
  let windowEnd = 0;
  let stats: Promise<ChildStats> | null = null;
  let pgBefore: ReturnType<PgBackendCpu['sample']> | null = null;
  let pgAfter: ReturnType<PgBackendCpu['sample']> | null = null;
  // Several targets (two instances): one autocannon each, at once, their responses counted together.
  const all: AcOptions[] = [build()].flat().map((o) => ({
    pipelining: 1,
    timeout: 10,
    ...o,
    duration: WARMUP + SECONDS + 0.5,
  }));
  const pids = server.pids ?? [server.pid];

  const done = Promise.all(
    all.map(
      (options) =>
        new Promise<void>((resolve, reject) => {
          const instance = autocannon(options, (err) => (err ? reject(err) : resolve()));
          instance.on('response', (_client, status, _bytes, latencyMs) => {
            if (!measuring) return;
            completed++;
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            // Latency only of requests sent inside the window: not the warm-up's stragglers.
            if (performance.now() - latencyMs >= windowStart) latencies.push(latencyMs);
          });
          instance.on('reqError', () => {
            if (measuring) errors++;
          });
        }),
    ),
  );
  const startTimer = setTimeout(() => {
    server.reset();
    before = cpuSample(pids);
    pgBefore = backends?.sample() ?? null;
    windowStart = performance.now();
    measuring = true;
  }, WARMUP * 1000);
  const endTimer = setTimeout(
    () => {
      measuring = false;
      windowEnd = performance.now();
      after = cpuSample(pids);
      pgAfter = backends?.sample() ?? null;
      stats = server.stats();
    },
    (WARMUP + SECONDS) * 1000,
  );
  try {
    await done;
  } finally {
    clearTimeout(startTimer);
    clearTimeout(endTimer);
  }
  if (!before || !after || !stats)
    throw new Error(`${label}: autocannon ended before the window closed`);
  const load = summarize(latencies, completed, statuses, errors, windowEnd - windowStart);
  const pgMs = backendCpuMs(await pgBefore, await pgAfter);
  return {
    label,
    connections: all.reduce((n, o) => n + o.connections, 0),
    load,
    cpu: cpuUse(before, after, load.requests, pgMs),
    stats: await stats,
  };
}

let warnings: string[] = [];
const runId = `${Date.now().toString(36)}-${process.pid}`;
let postCounter = 0;

async function referenceGetPhase(): Promise<PhaseResult> {
  const server = await startChild<ReferenceInfo>('bench-reference.ts', 'reference-get', {});
  try {
    const { port, userId } = server.info;
    return await measure('reference GET /users/:id', server, () => ({
      url: `http://127.0.0.1:${port}/users/${userId}`,
      connections: CONNECTIONS,
      duration: SECONDS,
    }));
  } finally {
    await server.stop();
  }
}

interface AppOptions {
  /** Run the app's background workers in the child (BENCH_WORKERS=1). */
  workers?: boolean;
  /** PostgreSQL instead of a fresh SQLite file: the URL and an existing, empty schema. */
  postgres?: { url: string; schema: string };
  /** SECRETS_KEY, for instances sharing one database. */
  secretsKey?: string;
}

async function startApp(profileName: string, options: AppOptions = {}): Promise<Child<AppInfo>> {
  const server = await startChild<AppInfo>('bench-server.ts', profileName, {
    BENCH_ABLATE: ABLATE,
    BENCH_WORKERS: options.workers ? '1' : '',
    BENCH_APP_DATABASE_URL: options.postgres?.url ?? '',
    BENCH_APP_DATABASE_SCHEMA: options.postgres?.schema ?? '',
    BENCH_APP_POOL_MAX: String(POOL_MAX),
    BENCH_APP_SECRETS_KEY: options.secretsKey ?? '',
  });
  const { usersReady, probe, ablate } = server.info;
  if (!usersReady) {
    warnings.push(
      `${profileName}: users endpoints NOT ready: POST /api/v3/users answered ${probe.status} ${probe.code ?? ''}` +
        (FALLBACK ? ' (BENCH_FALLBACK=credentials in use)' : ''),
    );
  }
  const note = `BENCH_ABLATE=${ablate.join(',')}: NOT the real pipeline`;
  if (ablate.length && !warnings.includes(note)) warnings.push(note);
  return server;
}

async function appGetPhase(): Promise<PhaseResult> {
  const server = await startApp('app-get');
  try {
    const { port, secret, userId } = server.info;
    const route = FALLBACK ? '/api/v3/credentials/current' : `/api/v3/users/${userId ?? 1}`;
    const label = FALLBACK ? 'app GET /credentials/current' : 'app GET /users/{id}';
    return await measure(label, server, () => ({
      url: `http://127.0.0.1:${port}${route}`,
      connections: CONNECTIONS,
      duration: SECONDS,
      headers: { authorization: `Bearer ${secret}`, accept: 'application/json' },
    }));
  } finally {
    await server.stop();
  }
}

const userBody = (n: number) => ({
  name: `Bench user ${n}`,
  email: `bench-${runId}-${n}@example.com`,
});

/**
 * The POST phases' load, the same for the reference and the app: each request with a unique
 * Idempotency-Key and email (the reference ignores the key, and has no credential to send).
 */
function postLoad(
  port: number,
  route: string,
  secret: string | null,
  body: (n: number) => object,
): AcOptions {
  return {
    url: `http://127.0.0.1:${port}`,
    connections: POST_CONNECTIONS,
    duration: SECONDS,
    requests: [
      {
        method: 'POST',
        path: route,
        setupRequest: (req) => {
          const n = ++postCounter;
          return {
            ...req,
            headers: {
              ...req.headers,
              ...(secret ? { authorization: `Bearer ${secret}` } : {}),
              accept: 'application/json',
              'content-type': 'application/json',
              'idempotency-key': `bench-${runId}-${n}`,
            },
            body: JSON.stringify(body(n)),
          };
        },
      },
    ],
  };
}

async function referencePostPhase(): Promise<PhaseResult> {
  const server = await startChild<ReferenceInfo>('bench-reference.ts', 'reference-post', {});
  try {
    const { port } = server.info;
    return await measure('reference POST /users', server, () =>
      postLoad(port, '/users', null, userBody),
    );
  } finally {
    await server.stop();
  }
}

async function referencePostDurablePhase(): Promise<PhaseResult> {
  const server = await startChild<ReferenceInfo>(
    'bench-reference-durable.ts',
    'reference-post-durable',
    {},
  );
  try {
    const { port } = server.info;
    return await measure('reference POST /users, durable writes', server, () =>
      postLoad(port, '/users', null, userBody),
    );
  } finally {
    await server.stop();
  }
}

async function appPostPhase(): Promise<PhaseResult> {
  const server = await startApp('app-post');
  try {
    const { port, secret } = server.info;
    const route = FALLBACK ? '/api/v3/credentials' : '/api/v3/users';
    const label = FALLBACK ? 'app POST /credentials' : 'app POST /users';
    const body = (n: number) =>
      FALLBACK ? { name: `Bench ${n}`, permissions: ['*'] } : userBody(n);
    return await measure(label, server, () => postLoad(port, route, secret, body));
  } finally {
    await server.stop();
  }
}

// PostgreSQL load phases: the same loads against the pg reference and the app, each child in a
// fresh schema of BENCH_DATABASE_URL.

async function inSchema<T>(
  run: (pg: { url: string; schema: string; backends: PgBackendCpu }) => Promise<T>,
): Promise<T> {
  const bench = await createBenchSchema(PG_URL!);
  const backends = new PgBackendCpu(PG_URL!);
  try {
    return await run({ url: PG_URL!, schema: bench.schema, backends });
  } finally {
    await backends.close().catch(() => undefined);
    await bench.drop();
  }
}

async function startPgReference(
  profileName: string,
  pg: { url: string; schema: string },
  script = 'bench-reference-pg.ts',
) {
  return startChild<ReferenceInfo>(script, profileName, {
    BENCH_REF_DATABASE_URL: pg.url,
    BENCH_REF_DATABASE_SCHEMA: pg.schema,
    BENCH_REF_POOL_MAX: String(POOL_MAX),
  });
}

function pgGetPhase(kind: 'reference' | 'app'): Promise<PhaseResult> {
  return inSchema(async (pg) => {
    if (kind === 'reference') {
      const server = await startPgReference('pg-reference-get', pg);
      try {
        const { port, userId } = server.info;
        return await measure(
          'PG reference GET /users/:id',
          server,
          () => ({
            url: `http://127.0.0.1:${port}/users/${userId}`,
            connections: CONNECTIONS,
            duration: SECONDS,
          }),
          pg.backends,
        );
      } finally {
        await server.stop();
      }
    }
    const server = await startApp('pg-app-get', { postgres: pg });
    try {
      const { port, secret, userId } = server.info;
      return await measure(
        'PG app GET /users/{id}',
        server,
        () => ({
          url: `http://127.0.0.1:${port}/api/v3/users/${userId ?? 1}`,
          connections: CONNECTIONS,
          duration: SECONDS,
          headers: { authorization: `Bearer ${secret}`, accept: 'application/json' },
        }),
        pg.backends,
      );
    } finally {
      await server.stop();
    }
  });
}

function pgPostPhase(kind: 'reference' | 'durable' | 'app'): Promise<PhaseResult> {
  return inSchema(async (pg) => {
    const server =
      kind === 'reference'
        ? await startPgReference('pg-reference-post', pg)
        : kind === 'durable'
          ? await startPgReference('pg-reference-post-durable', pg, 'bench-reference-durable-pg.ts')
          : await startApp('pg-app-post', { postgres: pg });
    try {
      const { port } = server.info;
      const secret = kind === 'app' ? (server.info as AppInfo).secret : null;
      const label =
        kind === 'app'
          ? 'PG app POST /users'
          : kind === 'durable'
            ? 'PG reference POST /users, durable writes'
            : 'PG reference POST /users';
      const route = kind === 'app' ? '/api/v3/users' : '/users';
      return await measure(
        label,
        server,
        () => postLoad(port, route, secret, userBody),
        pg.backends,
      );
    } finally {
      await server.stop();
    }
  });
}

/**
 * Two app instances on one schema, measured as one: each takes half the connections of its own
 * autocannon (the round-robin is the load generator's, not a proxy's: a proxy process would take
 * CPU from the two instances on this machine). Their CPU is added up; the loop and GC figures are
 * the first instance's.
 */
function pgTwoInstancesPhase(kind: 'get' | 'post'): Promise<PhaseResult> {
  return inSchema(async (pg) => {
    const secretsKey = randomBytes(32).toString('base64url');
    const a = await startApp(`pg-app-${kind}-2a`, { postgres: pg, secretsKey });
    const b = await startApp(`pg-app-${kind}-2b`, { postgres: pg, secretsKey }).catch(
      async (err) => {
        await a.stop();
        throw err;
      },
    );
    const pair: Child<AppInfo> = {
      info: a.info,
      pid: a.pid,
      pids: [a.pid, b.pid],
      reset: () => (a.reset(), b.reset()),
      stats: () => a.stats(),
      stop: async () => void (await Promise.all([a.stop(), b.stop()])),
    };
    const total = kind === 'get' ? CONNECTIONS : POST_CONNECTIONS;
    const half = (i: number) => (i === 0 ? Math.ceil(total / 2) : Math.floor(total / 2));
    try {
      const label = kind === 'get' ? 'PG app GET /users/{id}' : 'PG app POST /users';
      return await measure(
        `${label}, 2 instances`,
        pair,
        () =>
          [a, b].map(({ info }, i): AcOptions => {
            if (kind === 'post')
              return {
                ...postLoad(info.port, '/api/v3/users', info.secret, userBody),
                connections: half(i),
              };
            return {
              url: `http://127.0.0.1:${info.port}/api/v3/users/${info.userId ?? 1}`,
              connections: half(i),
              duration: SECONDS,
              headers: { authorization: `Bearer ${info.secret}`, accept: 'application/json' },
            };
          }),
        pg.backends,
      );
    } finally {
      await pair.stop();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Batch phase: a users.upsert operation of BATCH_ITEMS items, from POST to succeeded.

type Engine = 'sqlite' | 'postgres';
const ENGINES: Engine[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];
const engineName = (e: Engine) => (e === 'sqlite' ? 'SQLite' : 'PostgreSQL');

interface BatchRun {
  /** From sending the POST to receiving the poll that saw `succeeded`. */
  ms: number;
  /** Until the 202. */
  acceptMs: number;
  /** The operation's own timestamps (server clock, ms resolution): created -> started -> finished. */
  queuedMs: number | null;
  runningMs: number | null;
  polls: number;
}

interface BatchResult {
  engine: Engine;
  runs: BatchRun[];
  /** Median of the runs. */
  ms: number;
  cpu: CpuUse;
  /** Server CPU per item over all the measured batches, µs. */
  serverUsPerItem: number | null;
  stats: ChildStats;
}

let batchCounter = 0;
const FINAL = new Set(['succeeded', 'partially_succeeded', 'failed', 'canceled']);
const BATCH_TIMEOUT_MS = 120_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function getJson(url: string, secret: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${secret}`, accept: 'application/json' },
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: reported as text
  }
  return { status: res.status, body };
}

/** One batch: POST, then GET the operation every POLL_MS until it is final. Throws unless succeeded. */
async function runBatch(base: string, secret: string, engine: Engine): Promise<BatchRun> {
  const n = batchCounter++;
  const items = Array.from({ length: BATCH_ITEMS }, (_, i) => ({
    key: `k${i}`,
    payload: { email: `b${n}-${i}@example.com`, name: `B ${i}` },
  }));
  const body = JSON.stringify({ type: 'users.upsert', items });
  const what = `batch ${n} (${engineName(engine)})`;
  const t0 = performance.now();
  const res = await fetch(`${base}/api/v3/operations/batches`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${secret}`,
      accept: 'application/json',
      'content-type': 'application/json',
      'idempotency-key': `bench-batch-${runId}-${n}`,
    },
    body,
  });
  const text = await res.text();
  const acceptMs = performance.now() - t0;
  const id = res.status === 202 ? (JSON.parse(text) as any)?.data?.id : undefined;
  if (id === undefined || id === null)
    throw new Error(
      `${what}: POST /api/v3/operations/batches answered ${res.status}: ${text.slice(0, 500)}`,
    );
  const url = new URL(res.headers.get('location') ?? `/api/v3/operations/${id}`, base).href;

  let polls = 0;
  for (;;) {
    const sent = performance.now();
    const { status, body: b } = await getJson(url, secret);
    polls++;
    const op = b?.data;
    if (status !== 200 || !op?.status)
      throw new Error(`${what}: GET ${url} answered ${status}: ${JSON.stringify(b).slice(0, 500)}`);
    if (op.status === 'succeeded') {
      const ms = performance.now() - t0;
      const t = (iso: string | null) => (iso ? Date.parse(iso) : NaN);
      const span = (a: number, z: number) => (Number.isFinite(z - a) ? z - a : null);
      return {
        ms,
        acceptMs,
        queuedMs: span(t(op.created_at), t(op.started_at)),
        runningMs: span(t(op.started_at), t(op.finished_at)),
        polls,
      };
    }
    if (FINAL.has(op.status)) {
      const failed = await getJson(`${url}/items?status=failed&limit=5`, secret).catch(
        (err: Error) => ({ status: 0, body: String(err) }),
      );
      throw new Error(
        `${what}: operation ${id} ended ${op.status}, not succeeded: progress ` +
          `${JSON.stringify(op.progress)}, error ${JSON.stringify(op.error)}; failed items: ` +
          JSON.stringify(failed.body?.data ?? failed.body).slice(0, 1500),
      );
    }
    if (sent - t0 > BATCH_TIMEOUT_MS)
      throw new Error(
        `${what}: operation ${id} still ${op.status} after ${BATCH_TIMEOUT_MS / 1000} s ` +
          `(progress ${JSON.stringify(op.progress)})`,
      );
    await sleep(Math.max(0, POLL_MS - (performance.now() - sent)));
  }
}

async function batchPhase(engine: Engine): Promise<BatchResult> {
  const schema = engine === 'postgres' ? await createBenchSchema(PG_URL!) : null;
  try {
    const server = await startApp(`batch-${engine}`, {
      workers: true,
      postgres: schema ? { url: PG_URL!, schema: schema.schema } : undefined,
    });
    try {
      const { port, secret, workers, engine: running } = server.info;
      if (!workers || running !== engine)
        throw new Error(`batch-${engine}: the app child runs ${running}, workers ${workers}`);
      const base = `http://127.0.0.1:${port}`;
      process.stderr.write(
        `  batch (${engineName(engine)}): 1 warm-up, then ${BATCHES} x ${BATCH_ITEMS} items...\n`,
      );
      await runBatch(base, secret, engine);
      server.reset();
      const before = cpuSample([server.pid]);
      const runs: BatchRun[] = [];
      for (let i = 0; i < BATCHES; i++) runs.push(await runBatch(base, secret, engine));
      const after = cpuSample([server.pid]);
      const stats = await server.stats();
      const cpu = cpuUse(before, after, runs.length);
      const serverMs =
        before.server === null || after.server === null ? null : after.server - before.server;
      return {
        engine,
        runs,
        ms: medianOf(runs.map((r) => r.ms)),
        cpu,
        serverUsPerItem: serverMs === null ? null : (1000 * serverMs) / (BATCH_ITEMS * BATCHES),
        stats,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await schema?.drop();
  }
}

// ---------------------------------------------------------------------------------------------
// Jobs phase: enqueue-to-start latency of the job engine (bench/job-latency.ts, its own process).

interface JobLatency {
  engine: Engine;
  jobs: number;
  warmup: number;
  gapMs: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

const JOB_GAP_MS = 5;

async function jobsPhase(engine: Engine): Promise<JobLatency> {
  process.stderr.write(`  jobs (${engineName(engine)}): ${JOBS} jobs, ${JOB_GAP_MS} ms apart...\n`);
  const schema = engine === 'postgres' ? await createBenchSchema(PG_URL!) : null;
  try {
    const script = path.join(root, 'bench', 'job-latency.ts');
    const child = spawn(
      process.execPath,
      [script, schema ? PG_URL! : 'sqlite', String(JOBS), String(JOB_GAP_MS)],
      {
        cwd: root,
        env: { ...process.env, BENCH_JOBS_SCHEMA: schema?.schema ?? '' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearTimeout(timer);
    const lines = out.trim().split('\n');
    const last = lines.pop() ?? '';
    for (const line of lines) process.stderr.write(`[job-latency.ts] ${line}\n`);
    if (code !== 0 || !last.startsWith('{'))
      throw new Error(`bench/job-latency.ts (${engine}) exited with code ${code}: ${last}`);
    return JSON.parse(last) as JobLatency;
  } finally {
    await schema?.drop();
  }
}

// ---------------------------------------------------------------------------------------------
// Once per run, each in its own process (bench/webhooks.ts, bench/v1-pages.ts): webhook deliveries
// to a local receiver (event-to-delivery latency, burst throughput) and GET /api/v1/usuario walked
// page by page over 100,000 students (the last page must cost what the first does: keyset pages).

async function childJson(
  script: string,
  args: string[],
  timeoutMs = 600_000,
  nodeFlags: string[] = [],
): Promise<any> {
  const child = spawn(process.execPath, [...nodeFlags, path.join(root, 'bench', script), ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearTimeout(timer);
  const last = out.trim().split('\n').pop() ?? '';
  if (code !== 0 || !last.startsWith('{'))
    throw new Error(`bench/${script} exited with code ${code}: ${last}`);
  return JSON.parse(last);
}

const TARGET_WEBHOOKS_PER_S = 1000;
const TARGET_V1_LAST_OVER_FIRST = 1.5;
const TARGET_PLAN_500_MS = 1000;

async function extras(): Promise<string[][]> {
  const targets: string[][] = [];
  const where = (e: Engine) => (e === 'postgres' ? PG_URL! : 'sqlite');
  if (ONLY.has('webhooks')) {
    const rows: string[][] = [
      [
        'engine',
        'events',
        'p50 ms',
        'p99 ms',
        'burst deliveries/s',
        'statements/delivery',
        'CPU ms/delivery',
      ],
    ];
    // PostgreSQL also with the workers in two `npm run worker` processes (the scale-out shape).
    const runs: [Engine, number][] = ENGINES.flatMap((e): [Engine, number][] =>
      e === 'postgres'
        ? [
            [e, 0],
            [e, 2],
          ]
        : [[e, 0]],
    );
    for (const [e, workers] of runs) {
      const label = workers ? `${engineName(e)}, ${workers} worker processes` : engineName(e);
      process.stderr.write(`  webhooks (${label})...\n`);
      const r = await childJson('webhooks.ts', [where(e), '200', '1000', String(workers)]);
      rows.push([
        label,
        fmt(r.latency.events),
        fmt(r.latency.p50, 2),
        fmt(r.latency.p99, 2),
        fmt(r.burst.perSecond),
        // Those of the bench process's own pool (the worker processes' are not counted).
        // (SQLite's hot statements bypass knex, so it has no count.)
        workers || e === 'sqlite' ? '-' : fmt(r.burst.queriesPerDelivery, 1),
        // Every process of it (the bench's, the workers') and the database's backends: what a
        // delivery costs the machine, steadier than deliveries/s on a shared one.
        fmt(
          r.burst.cpuMsPerDelivery +
            (r.burst.workersCpuMsPerDelivery ?? 0) +
            (r.burst.databaseCpuMsPerDelivery ?? 0),
          2,
        ),
      ]);
      if (workers)
        targets.push([
          `webhook deliveries/s to one local receiver, ${label}`,
          fmt(r.burst.perSecond),
          `>= ${fmt(TARGET_WEBHOOKS_PER_S)}`,
          verdict(r.burst.perSecond >= TARGET_WEBHOOKS_PER_S, true),
        ]);
      if (e === 'sqlite')
        targets.push([
          'webhook deliveries/s to one local receiver, SQLite',
          fmt(r.burst.perSecond),
          `>= ${fmt(TARGET_WEBHOOKS_PER_S)}`,
          verdict(r.burst.perSecond >= TARGET_WEBHOOKS_PER_S, true),
        ]);
    }
    console.log(
      '\nWebhooks (bench/webhooks.ts): event-to-delivery latency, then a burst of 1,000 events to one endpoint',
    );
    console.log(table(rows));
  }
  if (ONLY.has('streams')) {
    const rows: string[][] = [
      ['engine', 'streams', 'events', 'events/s at every stream', 'recorded/s', 'p50 ms', 'p99 ms'],
    ];
    for (const e of ENGINES) {
      process.stderr.write(`  streams (${engineName(e)}): 20 streams of one account...\n`);
      const r = await childJson('streams.ts', [where(e), '1000']);
      rows.push([
        engineName(e),
        fmt(r.streams),
        fmt(r.events),
        fmt(r.eventsPerSecond),
        fmt(r.recordedPerSecond),
        fmt(r.p50, 2),
        fmt(r.p99, 2),
      ]);
    }
    console.log(
      '\nEvent streams (bench/streams.ts): 1,000 events recorded 10 a transaction, fanned out to 20 open streams of one account (commit to arrival)',
    );
    console.log(table(rows));
  }
  if (ONLY.has('imports')) targets.push(...(await importsPhase(where)));
  if (ONLY.has('v1pages')) {
    const rows: string[][] = [
      ['engine', 'students', 'pages', 'walk ms', 'first page ms', 'last page ms', 'last/first'],
    ];
    for (const e of ENGINES) {
      process.stderr.write(`  v1 pages (${engineName(e)}): 100,000 students...\n`);
      const r = await childJson('v1-pages.ts', [where(e), '100000']);
      rows.push([
        engineName(e),
        fmt(r.students),
        fmt(r.pages),
        fmt(r.walkMs),
        fmt(r.firstPageMs, 2),
        fmt(r.lastPageMs, 2),
        fmt(r.lastOverFirst, 2),
      ]);
      targets.push([
        `GET /api/v1/usuario last page vs first, ${engineName(e)}`,
        fmt(r.lastOverFirst, 2),
        `<= ${TARGET_V1_LAST_OVER_FIRST}`,
        verdict(r.lastOverFirst <= TARGET_V1_LAST_OVER_FIRST, true),
      ]);
    }
    console.log(
      '\nv1 pages (bench/v1-pages.ts): GET /api/v1/usuario, 150 students a page, keyset cursors',
    );
    console.log(table(rows));
  }
  if (ONLY.has('plans')) {
    const rows: string[][] = [
      ['engine', 'resources', 'plan ms (all create)', 'plan ms (all unchanged)'],
    ];
    for (const e of ENGINES) {
      process.stderr.write(`  plans (${engineName(e)}): 500 resources...\n`);
      const r = await childJson('plans.ts', [where(e), '5']);
      rows.push([engineName(e), fmt(r.resources), fmt(r.createMs, 1), fmt(r.unchangedMs, 1)]);
      if (e === 'sqlite')
        targets.push([
          'POST /plans of 500 resources, SQLite',
          fmt(Math.max(r.createMs, r.unchangedMs), 1),
          `< ${TARGET_PLAN_500_MS}`,
          verdict(Math.max(r.createMs, r.unchangedMs) < TARGET_PLAN_500_MS, true),
        ]);
    }
    console.log('\nPlans (bench/plans.ts): POST /plans of a 500-resource manifest, fastest of 5');
    console.log(table(rows));
  }
  if (ONLY.has('grants')) {
    const rows: string[][] = [['engine', 'items', 'creating items/s', 'renewing items/s']];
    for (const e of ENGINES) {
      process.stderr.write(`  enrollments.grant (${engineName(e)}): 1,000 items...\n`);
      const r = await childJson('grants.ts', [where(e), '1000', '3']);
      rows.push([
        engineName(e),
        fmt(r.items),
        fmt(r.create.itemsPerSecond),
        fmt(r.renew.itemsPerSecond),
      ]);
    }
    console.log(
      '\nenrollments.grant batches (bench/grants.ts): 1,000 items, creation to succeeded; ' +
        'the first creates (with welcome emails), the median of 3 more renews',
    );
    console.log(table(rows));
  }
  if (ONLY.has('audit')) {
    const rows: string[][] = [['engine', 'requests', 'audit bytes', 'bytes per request kept']];
    for (const e of ENGINES) {
      process.stderr.write(`  audit bytes (${engineName(e)})...\n`);
      const r = await childJson('audit-bytes.ts', [where(e), '4000']);
      rows.push([engineName(e), fmt(r.requests), fmt(r.bytes), fmt(r.perRequest)]);
    }
    console.log('\nDisk kept per request (bench/audit-bytes.ts): the audit table with its indexes');
    console.log(table(rows));
  }
  if (ONLY.has('files')) {
    const rows: string[][] = [['store', 'MiB', 'upload MB/s', 'download MB/s', 'peak RSS MiB']];
    for (const store of ['local', 's3']) {
      process.stderr.write(`  files (${store}): 256 MiB...\n`);
      const r = await childJson('files.ts', [store, '256']);
      rows.push([
        store,
        fmt(r.mib),
        fmt(r.uploadMBps, 1),
        fmt(r.downloadMBps, 1),
        fmt(r.peakRssMiB),
      ]);
    }
    console.log(
      '\nFiles (bench/files.ts): upload in parts (4 at a time) with completion, then download',
    );
    console.log(table(rows));
  }
  return targets;
}

// ---------------------------------------------------------------------------------------------
// Routing check: V3Router.find on a deep path, real catalog vs. ~500 more operations.

interface RoutingResult {
  path: string;
  realOps: number;
  inflatedOps: number;
  realNs: number;
  inflatedNs: number;
}

function syntheticOps(count: number): Operation[] {
  const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
  const shapes = [
    (i: number) => `/synthetic-${i}/{item_id}`,
    (i: number) => `/synthetic-${i}/{item_id}/parts/{part_id}`,
    // Siblings on the measured path itself, the worst case for a tree walk.
    (i: number) => `/users/{user_id}/extra-${i}`,
    (i: number) => `/users/{user_id}/tags/{tag_id}/extra-${i}`,
    (i: number) => `/u${i}/{user_id}/tags/{tag_id}`,
  ];
  const ops: Operation[] = [];
  for (let i = 0; i < count; i++) {
    const op = {
      id: `synthetic${i}`,
      method: methods[i % methods.length]!,
      path: shapes[i % shapes.length]!(i),
    };
    ops.push(op as unknown as Operation);
  }
  return ops;
}

function timeLookups(router: V3Router, method: string, url: string, n: number): number {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const m = router.find(method, url);
    if (m) sink += m.op.id.length;
  }
  const ns = Number(process.hrtime.bigint() - start) / n;
  if (sink === 0) throw new Error(`routing check: ${method} ${url} did not match`);
  return ns;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function routingCheck(): RoutingResult {
  const catalog = buildCatalog(loadSpec());
  const inflated = [...catalog, ...syntheticOps(500)];
  const real = new V3Router(catalog);
  const big = new V3Router(inflated);
  const method = 'PUT';
  const url = '/api/v3/users/123456/tags/654321';
  const expected = real.find(method, url)?.op.id;
  if (!expected || big.find(method, url)?.op.id !== expected)
    throw new Error(`routing check: ${method} ${url} does not resolve to the same operation`);
  const N = 200_000;
  timeLookups(real, method, url, N); // warm-up (JIT)
  timeLookups(big, method, url, N);
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < 7; round++) {
    a.push(timeLookups(real, method, url, N));
    b.push(timeLookups(big, method, url, N));
  }
  return {
    path: `${method} ${url} -> ${expected}`,
    realOps: catalog.length,
    inflatedOps: inflated.length,
    realNs: median(a),
    inflatedNs: median(b),
  };
}

// ---------------------------------------------------------------------------------------------
// Report

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows
    .map((r, i) => {
      const line = r.map((cell, c) =>
        c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!),
      );
      const text = line.join('  ');
      return i === 0 ? `${text}\n${'-'.repeat(text.length)}` : text;
    })
    .join('\n');
}

function failures(r: Load): number {
  return r.non2xx + r.errors;
}

function statusSummary(r: Load): string {
  return Object.entries(r.statuses)
    .map(([code, n]) => `${code}x${n}`)
    .join(' ');
}

function verdict(ok: boolean, valid: boolean): string {
  if (!valid) return 'INVALID (errors in run)';
  return ok ? 'PASS' : 'MISS';
}

const medianOf = (values: number[]): number => {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** The round whose req/s is the median: the representative of a phase in the tables. */
function medianRound(results: PhaseResult[]): PhaseResult {
  const sorted = [...results].sort((a, b) => a.load.rps - b.load.rps);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** The round whose batch time is the median. */
function medianBatch(results: BatchResult[]): BatchResult {
  const sorted = [...results].sort((a, b) => a.ms - b.ms);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

const opt = (n: number | null, digits = 0, unit = '') =>
  n === null ? 'n/a' : `${fmt(n, digits)}${unit}`;

function report(
  routing: RoutingResult | null,
  rounds: Map<string, PhaseResult[]>,
  batches: Map<Engine, BatchResult[]>,
  jobs: Map<Engine, JobLatency[]>,
): void {
  const phases = new Map([...rounds].map(([key, results]) => [key, medianRound(results)]));
  console.log(
    `\nSchool Platform API bench: ${ROUNDS} round(s), ${SECONDS} s per load phase (+${WARMUP} s warm-up), ` +
      `GET at ${CONNECTIONS} and POST at ${POST_CONNECTIONS} connections (closed loop: each sends ` +
      `its next request on the answer), node ${process.version}, ${CORES} cores`,
  );

  if (routing) {
    const growth = routing.inflatedNs / routing.realNs;
    console.log(`\nRouting: V3Router.find(${routing.path})`);
    console.log(
      table([
        ['catalog', 'operations', 'ns/lookup'],
        ['real', String(routing.realOps), fmt(routing.realNs, 1)],
        ['inflated (+500 synthetic)', String(routing.inflatedOps), fmt(routing.inflatedNs, 1)],
      ]),
    );
    console.log(
      `inflated/real = ${fmt(growth, 2)}x  ` +
        (growth <= 1.5
          ? 'PASS: lookup cost does not grow with the catalog'
          : 'MISS: lookup slows down as operations are added'),
    );
  }

  if (phases.size) {
    const rows = [
      [
        'phase',
        'conns',
        'req/s',
        'avg ms',
        'p50 ms',
        'p99 ms',
        'max ms',
        '2xx',
        'non-2xx',
        'errors',
        'statuses',
      ],
    ];
    for (const { label, connections, load: r } of phases.values()) {
      rows.push([
        label,
        String(connections),
        fmt(r.rps),
        fmt(r.latency.avg, 2),
        fmt(r.latency.p50, 1),
        fmt(r.latency.p99, 1),
        fmt(r.latency.max, 1),
        fmt(r.ok),
        fmt(r.non2xx),
        fmt(r.errors),
        statusSummary(r),
      ]);
    }
    if (ROUNDS > 1) {
      const perRound = [['phase', ...Array.from({ length: ROUNDS }, (_, i) => `round ${i + 1}`)]];
      for (const results of rounds.values()) {
        perRound.push([
          results[0]!.label,
          ...results.map((r) => `${fmt(r.load.rps)} req/s, p99 ${fmt(r.load.latency.p99, 1)} ms`),
        ]);
      }
      console.log('\nRounds');
      console.log(table(perRound));
    }
    console.log(`\nLoad${ROUNDS > 1 ? ' (the median round of each phase)' : ''}`);
    console.log(table(rows));

    const cpuRows = [
      [
        'phase',
        'server CPU',
        'CPU µs/req',
        'PG backends CPU',
        'PG µs/req',
        'other procs CPU',
        'of it steal',
        'loop delay p99/max ms',
        'GC pauses (ms total/max)',
      ],
    ];
    for (const { label, cpu, stats } of phases.values()) {
      cpuRows.push([
        label,
        opt(cpu.serverPct, 0, '%'),
        opt(cpu.serverUsPerReq, 0),
        opt(cpu.pgPct, 0, '%'),
        opt(cpu.pgUsPerReq, 0),
        opt(cpu.otherPct, 0, '%'),
        opt(cpu.stealPct, 0, '%'),
        `${fmt(stats.loopDelay.p99, 1)} / ${fmt(stats.loopDelay.max, 1)}`,
        `${stats.gc.count} (${fmt(stats.gc.totalMs)} / ${fmt(stats.gc.maxMs, 1)})`,
      ]);
      if (cpu.otherPct !== null && cpu.otherPct > OTHER_CPU_WARN_PCT) {
        warnings.push(
          `${label}: other processes used ${fmt(cpu.otherPct)}% of a core during the run ` +
            `(${CORES} cores): the figures are disturbed, run again on a quiet machine`,
        );
      }
    }
    console.log(
      '\nServer process (CPU: 100% = one core, so ~100% means the server is CPU-bound; ' +
        "PG backends = the bench database's PostgreSQL backends (PG phases); other procs = the " +
        'rest of the machine, this bench and those backends excluded; steal = cores the ' +
        'hypervisor gave to other machines, counted in other procs)',
    );
    console.log(table(cpuRows));
  }

  if (batches.size) {
    const engines = [...batches.keys()];
    const picked = engines.map((e) => medianBatch(batches.get(e)!));
    const all = (e: Engine) => batches.get(e)!.flatMap((r) => r.runs);
    const med = (e: Engine, f: (r: BatchRun) => number | null) => {
      const xs = all(e)
        .map(f)
        .filter((x): x is number => x !== null);
      return xs.length ? medianOf(xs) : null;
    };
    const row = (name: string, f: (r: BatchResult, e: Engine) => string) => [
      name,
      ...engines.map((e, i) => f(picked[i]!, e)),
    ];
    const msOf = (e: Engine) => medianOf(batches.get(e)!.map((r) => r.ms));
    const rows = [
      ['', ...engines.map(engineName)],
      row('ms per batch, POST to succeeded', (_, e) => fmt(msOf(e), 1)),
      row('items/s', (_, e) => fmt((BATCH_ITEMS * 1000) / msOf(e))),
      row('  POST answered 202, ms', (_, e) =>
        opt(
          med(e, (r) => r.acceptMs),
          1,
        ),
      ),
      row('  queued, created -> started, ms', (_, e) =>
        opt(
          med(e, (r) => r.queuedMs),
          0,
        ),
      ),
      row('  running, started -> finished, ms', (_, e) =>
        opt(
          med(e, (r) => r.runningMs),
          0,
        ),
      ),
      row('  polls per batch', (_, e) =>
        opt(
          med(e, (r) => r.polls),
          0,
        ),
      ),
      row('server CPU µs/item', (r) => opt(r.serverUsPerItem, 0)),
      row('server CPU', (r) => opt(r.cpu.serverPct, 0, '%')),
      row('other procs CPU', (r) => opt(r.cpu.otherPct, 0, '%')),
      row('of it steal', (r) => opt(r.cpu.stealPct, 0, '%')),
      row(
        'loop delay p99/max ms',
        (r) => `${fmt(r.stats.loopDelay.p99, 1)} / ${fmt(r.stats.loopDelay.max, 1)}`,
      ),
      ...Array.from({ length: ROUNDS }, (_, i) =>
        row(`round ${i + 1}: ms per batch`, (_, e) =>
          batches
            .get(e)!
            [i]!.runs.map((x) => fmt(x.ms, 0))
            .join(', '),
        ),
      ),
    ];
    console.log(
      `\nBatches: users.upsert of ${fmt(BATCH_ITEMS)} items (POST /api/v3/operations/batches, then ` +
        `GET the operation every ${POLL_MS} ms until succeeded), workers in the server process; ` +
        `${BATCHES} per round after one warm-up; medians over all rounds (CPU, loop delay: the ` +
        `median round). On PostgreSQL the database's own CPU counts in other procs.`,
    );
    console.log(table(rows));
    const sqlite = batches.get('sqlite');
    const cpu = sqlite ? medianBatch(sqlite).cpu : null;
    if (cpu?.otherPct != null && cpu.otherPct > OTHER_CPU_WARN_PCT)
      warnings.push(
        `batch (SQLite): other processes used ${fmt(cpu.otherPct)}% of a core during the run ` +
          `(${CORES} cores): the figures are disturbed, run again on a quiet machine`,
      );
  }

  if (jobs.size) {
    const engines = [...jobs.keys()];
    const medOf = (e: Engine, f: (j: JobLatency) => number) => medianOf(jobs.get(e)!.map(f));
    const row = (name: string, f: (j: JobLatency) => number) => [
      name,
      ...engines.map((e) => fmt(medOf(e, f), 2)),
    ];
    console.log(
      `\nJob engine: enqueue-to-start latency (bench/job-latency.ts), ${fmt(JOBS)} jobs per round ` +
        `after 20 warm-up, enqueued one at a time ${JOB_GAP_MS} ms apart, each in its own ` +
        `transaction; medians over the rounds`,
    );
    console.log(
      table([
        ['', ...engines.map(engineName)],
        row('p50 ms', (j) => j.p50),
        row('p90 ms', (j) => j.p90),
        row('p99 ms', (j) => j.p99),
        row('max ms', (j) => j.max),
        ...Array.from({ length: ROUNDS }, (_, i) => [
          `round ${i + 1}: p50 / p99 ms`,
          ...engines.map((e) => {
            const j = jobs.get(e)![i]!;
            return `${fmt(j.p50, 2)} / ${fmt(j.p99, 2)}`;
          }),
        ]),
      ]),
    );
  }

  const clean = (results: PhaseResult[]) => results.every((r) => failures(r.load) === 0);
  const targets: string[][] = [['target', 'measured', 'goal', 'result']];
  for (const [key, refKey, goal, name] of [
    [
      'get',
      'reference-get',
      TARGET_GET_RATIO,
      `GET  app/reference req/s @ ${CONNECTIONS} connections (median of rounds)`,
    ],
    [
      'post',
      'reference-post',
      TARGET_POST_RATIO,
      `POST app/bare-insert reference req/s @ ${POST_CONNECTIONS} connections (median of rounds; the floor, not a target)`,
    ],
    [
      'post',
      'reference-post-durable',
      TARGET_POST_DURABLE_RATIO,
      `POST app/durable-writes reference req/s @ ${POST_CONNECTIONS} connections (median of rounds)`,
    ],
    [
      'pg-get',
      'pg-reference-get',
      TARGET_PG_GET_RATIO,
      `PG GET  app/reference req/s @ ${CONNECTIONS} connections, pool ${POOL_MAX} (median of rounds)`,
    ],
    [
      'pg-post',
      'pg-reference-post',
      TARGET_PG_POST_RATIO,
      `PG POST app/reference req/s @ ${POST_CONNECTIONS} connections, pool ${POOL_MAX} (median of rounds)`,
    ],
    [
      'pg-post',
      'pg-reference-post-durable',
      null,
      `PG POST app/durable-writes reference req/s @ ${POST_CONNECTIONS} connections, pool ${POOL_MAX} (median of rounds; no target)`,
    ],
    [
      'pg-reference-post-durable',
      'pg-reference-post',
      null,
      `PG durable-writes reference/bare insert req/s (median of rounds): the ceiling of PG POST against the bare insert`,
    ],
  ] as const) {
    const results = rounds.get(key);
    const refs = rounds.get(refKey);
    if (!results || !refs) continue;
    const ratios = results.map((r, i) => r.load.rps / refs[i]!.load.rps);
    const ratio = medianOf(ratios);
    const spread = ratios.length > 1 ? ` (rounds ${ratios.map((x) => fmt(x, 3)).join(', ')})` : '';
    const valid = clean(results) && clean(refs);
    if (refKey === 'reference-post') {
      targets.push([name, fmt(ratio, 3) + spread, `(was >= ${goal})`, 'floor']);
      continue;
    }
    if (goal === null) {
      targets.push([name, fmt(ratio, 3) + spread, '', '']);
      continue;
    }
    if (key === 'get' && ratios.length < GET_MIN_ROUNDS) {
      targets.push([
        name,
        fmt(ratio, 3) + spread,
        `>= ${goal}`,
        `n/a: needs ${GET_MIN_ROUNDS} rounds`,
      ]);
      continue;
    }
    targets.push([name, fmt(ratio, 3) + spread, `>= ${goal}`, verdict(ratio >= goal, valid)]);
  }
  const posts = rounds.get('post');
  if (posts) {
    const p99 = medianOf(posts.map((r) => r.load.latency.p99));
    targets.push([
      `POST p99 @ ${POST_CONNECTIONS} connections (median)`,
      `${fmt(p99, 1)} ms`,
      `< ${TARGET_P99_MS} ms`,
      verdict(p99 < TARGET_P99_MS, clean(posts)),
    ]);
  }
  const pgPosts = rounds.get('pg-post');
  if (pgPosts) {
    const p99 = medianOf(pgPosts.map((r) => r.load.latency.p99));
    targets.push([
      `PG POST p99 @ ${POST_CONNECTIONS} connections, pool ${POOL_MAX} (median)`,
      `${fmt(p99, 1)} ms`,
      `< ${TARGET_P99_MS} ms`,
      verdict(p99 < TARGET_P99_MS, clean(pgPosts)),
    ]);
  }
  const sqliteBatches = batches.get('sqlite');
  if (sqliteBatches) {
    const ms = medianOf(sqliteBatches.map((r) => r.ms));
    targets.push([
      `batch of ${fmt(BATCH_ITEMS)} items, POST to succeeded, SQLite (median)`,
      `${fmt(ms, 1)} ms`,
      `< ${fmt(TARGET_BATCH_MS)} ms`,
      verdict(ms < TARGET_BATCH_MS, true),
    ]);
  }
  const pgBatches = batches.get('postgres');
  if (pgBatches) {
    const ms = medianOf(pgBatches.map((r) => r.ms));
    const perSecond = (BATCH_ITEMS / ms) * 1000;
    targets.push([
      `batch of ${fmt(BATCH_ITEMS)} items, POST to succeeded, PostgreSQL (median), items/s`,
      fmt(perSecond),
      `>= ${fmt(TARGET_PG_BATCH_ITEMS_PER_S)}`,
      verdict(perSecond >= TARGET_PG_BATCH_ITEMS_PER_S, true),
    ]);
  }
  if (targets.length > 1) {
    console.log('\nTargets');
    console.log(table(targets));
    // Closed loop: mean latency = connections / throughput (Little's law), so a p99 goal at a
    // fixed connection count is a throughput goal in disguise. Say which.
    const needs: string[] = [];
    for (const key of ['reference-post', 'post', 'pg-reference-post', 'pg-post'] as const) {
      const p = phases.get(key);
      if (!p || !p.load.latency.avg) continue;
      const spread = p.load.latency.p99 / p.load.latency.avg;
      const rps = (p.connections * spread * 1000) / TARGET_P99_MS;
      needs.push(`${key} ~${fmt(rps)} req/s (measured ${fmt(p.load.rps)})`);
    }
    if (needs.length)
      console.log(
        `POST p99 < ${TARGET_P99_MS} ms at ${POST_CONNECTIONS} connections needs, at each phase's ` +
          `p99/mean spread: ${needs.join(', ')}.`,
      );
  }

  scaleFactors(phases);

  const broken = [...rounds.values()].flat().filter((p) => failures(p.load) > 0);
  for (const p of broken) {
    const r = p.load;
    warnings.push(
      `${p.label}: ${fmt(r.non2xx)} non-2xx responses, ${fmt(r.errors)} socket errors/timeouts ` +
        `(${statusSummary(r)}): these figures do NOT measure the intended path`,
    );
  }
  if (warnings.length) {
    const bar = '!'.repeat(78);
    console.log(`\n${bar}`);
    for (const w of warnings) console.log(`!! WARNING: ${w}`);
    console.log(bar);
  }
  if (CPU_PROF) console.log(`\nCPU profiles written to ${CPU_PROF}`);
}

/**
 * Two instances against one, on PostgreSQL. On this machine's 2 cores the factor stays below 2:
 * the instances, PostgreSQL and the load generator share the same two cores, so a second instance
 * adds processes, not CPU; it gains only where one instance left a core idle (waiting on the
 * database's round trips). docs/speed.md says more.
 */
function scaleFactors(phases: Map<string, PhaseResult>): void {
  const rows: string[][] = [];
  for (const [one, two] of [
    ['pg-get', 'pg-get-2'],
    ['pg-post', 'pg-post-2'],
  ] as const) {
    const a = phases.get(one);
    const b = phases.get(two);
    if (!a || !b) continue;
    rows.push([
      b.label,
      fmt(a.load.rps),
      fmt(b.load.rps),
      fmt(b.load.rps / a.load.rps, 2),
      `${fmt(a.load.latency.p99, 1)} / ${fmt(b.load.latency.p99, 1)}`,
      `${opt(a.cpu.serverPct, 0, '%')} / ${opt(b.cpu.serverPct, 0, '%')}`,
    ]);
  }
  if (!rows.length) return;
  console.log(`
Two instances on one PostgreSQL (${CORES} cores; median rounds)`);
  console.log(
    table([
      [
        'phase',
        'one: req/s',
        'two: req/s',
        'scale factor',
        'p99 ms one / two',
        'app CPU one / two',
      ],
      ...rows,
    ]),
  );
  console.log(
    `Below 2 on ${CORES} cores: both instances, PostgreSQL and the load generator share them, so ` +
      'a second instance adds processes, not CPU; it gains only what one instance left idle.',
  );
}

/** The no-regression check against the previous release's figures (bench/baseline.ts). */
function regressions(rounds: Map<string, PhaseResult[]>, batches: Map<Engine, BatchResult[]>) {
  const ratio = (key: string, ref: string) => {
    const a = rounds.get(key);
    const b = rounds.get(ref);
    return a && b ? a.map((r, i) => r.load.rps / b[i]!.load.rps) : [];
  };
  // Batch rates are absolute, and this machine's speed moves between days (the reference GET alone
  // at 10,000 and at 41,000 req/s): each round's rate is judged per 1,000 req/s of that round's
  // reference GET, which ran minutes before it on the same machine.
  const rate = (e: Engine) => {
    const ref = rounds.get('reference-get');
    return (batches.get(e) ?? []).flatMap((r, i) =>
      ref?.[i] ? [((BATCH_ITEMS / r.ms) * 1000 * 1000) / ref[i]!.load.rps] : [],
    );
  };
  const measured = new Map<string, number[]>([
    ['GET app/reference (SQLite)', ratio('get', 'reference-get')],
    ['POST app/bare-insert reference (SQLite)', ratio('post', 'reference-post')],
    ['POST app/durable-writes reference (SQLite)', ratio('post', 'reference-post-durable')],
    ['PG GET app/reference', ratio('pg-get', 'pg-reference-get')],
    ['PG POST app/reference', ratio('pg-post', 'pg-reference-post')],
    ['PG POST app/durable-writes reference', ratio('pg-post', 'pg-reference-post-durable')],
    ['batch items/s per 1,000 reference GET/s (SQLite)', rate('sqlite')],
    ['batch items/s per 1,000 reference GET/s (PostgreSQL)', rate('postgres')],
  ]);
  const rows = regressionRows(measured);
  if (!rows.length) return;
  const { release } = loadBaseline();
  console.log(
    `\nAgainst ${release}'s committed figures (bench/baseline.json; MISS: below by more than the noise)`,
  );
  console.log(
    table([['figure', release, 'this run (median)', 'noise (round spread)', 'result'], ...rows]),
  );
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  warnings = [];
  let routing: RoutingResult | null = null;
  if (ONLY.has('routing')) {
    process.stderr.write('  routing check...\n');
    routing = routingCheck();
  }
  const rounds = new Map<string, PhaseResult[]>();
  const batches = new Map<Engine, BatchResult[]>();
  const jobs = new Map<Engine, JobLatency[]>();
  const add = <K, V>(map: Map<K, V[]>, key: K, value: V) =>
    map.set(key, [...(map.get(key) ?? []), value]);
  for (let round = 1; round <= ROUNDS; round++) {
    if (ROUNDS > 1) process.stderr.write(`round ${round} of ${ROUNDS}\n`);
    if (ONLY.has('reference-get')) add(rounds, 'reference-get', await referenceGetPhase());
    if (ONLY.has('get')) add(rounds, 'get', await appGetPhase());
    if (ONLY.has('reference-post')) add(rounds, 'reference-post', await referencePostPhase());
    if (ONLY.has('reference-post-durable'))
      add(rounds, 'reference-post-durable', await referencePostDurablePhase());
    if (ONLY.has('post')) add(rounds, 'post', await appPostPhase());
    if (PG_URL) {
      if (ONLY.has('pg-reference-get'))
        add(rounds, 'pg-reference-get', await pgGetPhase('reference'));
      if (ONLY.has('pg-get')) add(rounds, 'pg-get', await pgGetPhase('app'));
      if (ONLY.has('pg-reference-post'))
        add(rounds, 'pg-reference-post', await pgPostPhase('reference'));
      if (ONLY.has('pg-reference-post-durable'))
        add(rounds, 'pg-reference-post-durable', await pgPostPhase('durable'));
      if (ONLY.has('pg-post')) add(rounds, 'pg-post', await pgPostPhase('app'));
      if (ONLY.has('pg-get-2')) add(rounds, 'pg-get-2', await pgTwoInstancesPhase('get'));
      if (ONLY.has('pg-post-2')) add(rounds, 'pg-post-2', await pgTwoInstancesPhase('post'));
    }
    if (ONLY.has('batch')) for (const e of ENGINES) add(batches, e, await batchPhase(e));
    if (ONLY.has('jobs')) for (const e of ENGINES) add(jobs, e, await jobsPhase(e));
  }
  report(routing, rounds, batches, jobs);
  regressions(rounds, batches);
  const more = await extras();
  if (more.length) {
    console.log('\nTargets of the once-per-run phases');
    console.log(table([['target', 'measured', 'goal', 'result'], ...more]));
  }
  const phases = new Map([...rounds].map(([key, results]) => [key, medianRound(results)]));
  if (process.env.BENCH_JSON) {
    const out = {
      rounds: ROUNDS,
      seconds: SECONDS,
      connections: CONNECTIONS,
      postConnections: POST_CONNECTIONS,
      ablate: ABLATE,
      routing,
      phases: Object.fromEntries(
        [...phases].map(([key, { label, connections, load: r, cpu, ...p }]) => [
          key,
          {
            label,
            connections,
            rps: r.rps,
            latency: r.latency,
            ok: r.ok,
            non2xx: r.non2xx,
            errors: r.errors,
            cpu,
            server: p.stats,
          },
        ]),
      ),
      batch: Object.fromEntries(
        [...batches].map(([engine, results]) => {
          const ms = medianOf(results.map((r) => r.ms));
          return [
            engine,
            {
              items: BATCH_ITEMS,
              ms,
              itemsPerSecond: (BATCH_ITEMS * 1000) / ms,
              rounds: results.map((r) => r.runs),
              serverUsPerItem: medianBatch(results).serverUsPerItem,
              cpu: medianBatch(results).cpu,
            },
          ];
        }),
      ),
      jobs: Object.fromEntries([...jobs].map(([engine, results]) => [engine, results])),
    };
    fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify(out, null, 2) + '\n');
  }
}

try {
  await main();
  process.exit(0);
} catch (err) {
  console.error('bench crashed:', err);
  process.exit(1);
}

// A 100,000-row import (analysis + processing) and a 100,000-user export (bench/imports.ts), each
// size in its own process so that each peak RSS is its own.
async function importsPhase(where: (e: Engine) => string): Promise<string[][]> {
  const targets: string[][] = [];
  const rows: string[][] = [['engine', 'rows', 'phase', 'rows/s', 'peak RSS MiB']];
  for (const e of ENGINES) {
    const peaks: Record<number, number> = {};
    for (const n of IMPORT_ROWS) {
      process.stderr.write(`  imports and exports (${engineName(e)}): ${fmt(n)} rows...\n`);
      // The child runs the workers as `npm run worker` does: with its V8 flags.
      const r = await childJson(
        'imports.ts',
        [where(e), String(n)],
        3_600_000,
        scriptNodeFlags('worker'),
      );
      for (const p of ['analysis', 'processing', 'export'] as const)
        rows.push([engineName(e), fmt(n), p, fmt(r[p].rowsPerSecond), fmt(r[p].peakRssMiB, 1)]);
      peaks[n] = r.export.peakRssMiB;
    }
    if (peaks[100_000] === undefined || peaks[1_000] === undefined) continue;
    const growth = peaks[100_000] - peaks[1_000];
    targets.push([
      `import + export peak RSS, 100,000 rows vs 1,000, ${engineName(e)}`,
      `+${fmt(growth, 1)} MiB`,
      '<= +64 MiB',
      verdict(growth <= 64, true),
    ]);
  }
  console.log('\nImports and exports (bench/imports.ts): rows/s and peak RSS per phase');
  console.log(table(rows));
  return targets;
}
