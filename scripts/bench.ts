// npm run bench: throughput and p99 latency of the real server against a bare reference server,
// plus a routing check. One round measures, sequentially, each against a fresh child process:
//   1. reference  GET /users/:id       Koa + @koa/router + better-sqlite3 (scripts/bench-reference.ts)
//   2. app        GET /api/v3/users/{id}  the full v3 pipeline (scripts/bench-server.ts)
//   3. app        POST /api/v3/users      full pipeline, a unique Idempotency-Key and email each
// A run is BENCH_ROUNDS rounds; it prints each round, the median round of each phase, the
// app/reference ratios (the median of each round's ratio: a shared virtual machine's speed drifts
// by tens of percent within minutes, and phases measured side by side drift together) and
// PASS/MISS per target. Each phase is one autocannon run: a warm-up, then the measured window
// (see measure()). Non-2xx responses and socket
// errors are counted and reported loudly; so is CPU used by other processes during a window. It is
// a measurement, not a test: it exits 0 whatever the figures, non-zero only when something crashed.
// Profiling helpers live in bench/ (README there).
//
// Environment:
//   BENCH_ROUNDS       rounds (default 3)
//   BENCH_SECONDS      measured seconds per phase and round (default 8)
//   BENCH_CONNECTIONS  concurrent connections (default 50)
//   BENCH_WARMUP       warm-up seconds per phase, not measured (default 2)
//   BENCH_ONLY         comma-separated subset of: routing, reference, get, post
//   BENCH_CPU_PROF     a directory: server children run with --cpu-prof and write their profiles
//                      to DIR/<phase>/ (the main thread's is the largest; summarise it with
//                      `npx tsx bench/profile-summary.ts FILE`)
//   BENCH_ABLATE       no-ops / prototypes swapped into the app server (bench/ablations.ts);
//                      profiling only, and every such run says so
//   BENCH_JSON         a file: the figures are also written there as JSON (bench/ablate.ts reads it)
//   BENCH_FALLBACK     `credentials`: while the users endpoints are not implemented, bench
//                      GET /credentials/current and POST /credentials instead (development only)
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { loadSpec } from '../src/app.ts';
import { buildCatalog, type Operation } from '../src/http/v3/catalog.ts';
import { V3Router } from '../src/http/v3/router.ts';
import type { ChildStats } from '../bench/child-control.ts';

// ---------------------------------------------------------------------------------------------
// Options

function numEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number`);
  return n;
}

const ROUNDS = Math.round(numEnv('BENCH_ROUNDS', 3));
const SECONDS = numEnv('BENCH_SECONDS', 8);
const CONNECTIONS = Math.round(numEnv('BENCH_CONNECTIONS', 50));
const WARMUP = numEnv('BENCH_WARMUP', 2);
const ONLY = new Set(
  (process.env.BENCH_ONLY ?? 'routing,reference,get,post').split(',').map((s) => s.trim()),
);
const CPU_PROF = process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : null;
const FALLBACK = process.env.BENCH_FALLBACK === 'credentials';
const ABLATE = process.env.BENCH_ABLATE ?? '';

const TARGET_GET_RATIO = 0.5;
const TARGET_POST_RATIO = 0.3;
const TARGET_P99_MS = 10;
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
  /** Starts a measurement window in the child (see bench/child-control.ts). */
  reset(): void;
  stats(): Promise<ChildStats>;
  stop(): Promise<void>;
}

async function startChild<T>(script: string, profileName: string, env: NodeJS.ProcessEnv) {
  const args = ['--import', 'tsx'];
  // One directory per phase: tsx's loader thread writes a profile of its own beside the main one.
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
  /** CPU used by every other process on the machine (not the server, not this bench), % of one core. */
  otherPct: number | null;
  /** Time the hypervisor gave this machine's cores to someone else, % of one core. */
  stealPct: number | null;
}

interface PhaseResult {
  label: string;
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

function pidCpuMs(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10; // utime, stime
  } catch {
    return null;
  }
}

function cpuSample(pid: number): CpuSample {
  const u = process.cpuUsage();
  const machine = procBusyMs();
  return {
    wall: performance.now(),
    busy: machine?.busy ?? null,
    steal: machine?.steal ?? null,
    server: pidCpuMs(pid),
    self: (u.user + u.system) / 1000,
  };
}

function cpuUse(a: CpuSample, b: CpuSample, requests: number): CpuUse {
  const wall = b.wall - a.wall;
  const server = a.server === null || b.server === null ? null : b.server - a.server;
  const busy = a.busy === null || b.busy === null ? null : b.busy - a.busy;
  return {
    serverPct: server === null ? null : (100 * server) / wall,
    serverUsPerReq: server === null || !requests ? null : (1000 * server) / requests,
    otherPct:
      busy === null || server === null
        ? null
        : Math.max(0, (100 * (busy - server - (b.self - a.self))) / wall),
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
 */
async function measure(
  label: string,
  server: Child<unknown>,
  build: () => AcOptions,
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

  const done = new Promise<void>((resolve, reject) => {
    const instance = autocannon(
      {
        pipelining: 1,
        timeout: 10,
        ...build(),
        duration: WARMUP + SECONDS + 0.5,
      },
      (err) => (err ? reject(err) : resolve()),
    );
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
  });
  const startTimer = setTimeout(() => {
    server.reset();
    before = cpuSample(server.pid);
    windowStart = performance.now();
    measuring = true;
  }, WARMUP * 1000);
  const endTimer = setTimeout(
    () => {
      measuring = false;
      windowEnd = performance.now();
      after = cpuSample(server.pid);
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
  return { label, load, cpu: cpuUse(before, after, load.requests), stats: await stats };
}

let warnings: string[] = [];
const runId = `${Date.now().toString(36)}-${process.pid}`;
let postCounter = 0;

async function referencePhase(): Promise<PhaseResult> {
  const server = await startChild<ReferenceInfo>('bench-reference.ts', 'reference', {});
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

async function startApp(profileName: string): Promise<Child<AppInfo>> {
  const server = await startChild<AppInfo>('bench-server.ts', profileName, {
    BENCH_ABLATE: ABLATE,
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

async function appPostPhase(): Promise<PhaseResult> {
  const server = await startApp('app-post');
  try {
    const { port, secret } = server.info;
    const route = FALLBACK ? '/api/v3/credentials' : '/api/v3/users';
    const label = FALLBACK ? 'app POST /credentials' : 'app POST /users';
    const body = (n: number) =>
      FALLBACK
        ? { name: `Bench ${n}`, permissions: ['*'] }
        : { name: `Bench user ${n}`, email: `bench-${runId}-${n}@example.com` };
    return await measure(label, server, () => ({
      url: `http://127.0.0.1:${port}`,
      connections: CONNECTIONS,
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
                authorization: `Bearer ${secret}`,
                accept: 'application/json',
                'content-type': 'application/json',
                'idempotency-key': `bench-${runId}-${n}`,
              },
              body: JSON.stringify(body(n)),
            };
          },
        },
      ],
    }));
  } finally {
    await server.stop();
  }
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

function report(routing: RoutingResult | null, rounds: Map<string, PhaseResult[]>): void {
  const phases = new Map([...rounds].map(([key, results]) => [key, medianRound(results)]));
  console.log(
    `\nSchool Platform API bench: ${ROUNDS} round(s), ${SECONDS} s per phase (+${WARMUP} s warm-up), ` +
      `${CONNECTIONS} connections (closed loop: each sends its next request on the answer), node ${process.version}, ${CORES} cores`,
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
    for (const { label, load: r } of phases.values()) {
      rows.push([
        label,
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

    const opt = (n: number | null, digits = 0, unit = '') =>
      n === null ? 'n/a' : `${fmt(n, digits)}${unit}`;
    const cpuRows = [
      [
        'phase',
        'server CPU',
        'CPU µs/req',
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
        'other procs = the rest of the machine, this bench excluded; steal = cores the ' +
        'hypervisor gave to other machines, counted in other procs)',
    );
    console.log(table(cpuRows));
  }

  const refs = rounds.get('reference');
  const clean = (results: PhaseResult[]) => results.every((r) => failures(r.load) === 0);
  const targets: string[][] = [['target', 'measured', 'goal', 'result']];
  for (const [key, goal, name] of [
    ['get', TARGET_GET_RATIO, 'GET  app/reference req/s'],
    ['post', TARGET_POST_RATIO, 'POST app/reference req/s'],
  ] as const) {
    const results = rounds.get(key);
    if (!results || !refs) continue;
    const ratios = results.map((r, i) => r.load.rps / refs[i]!.load.rps);
    const ratio = medianOf(ratios);
    const spread = ratios.length > 1 ? ` (rounds ${ratios.map((x) => fmt(x, 3)).join(', ')})` : '';
    const valid = clean(results) && clean(refs);
    targets.push([name, fmt(ratio, 3) + spread, `>= ${goal}`, verdict(ratio >= goal, valid)]);
  }
  for (const key of ['get', 'post'] as const) {
    const results = rounds.get(key);
    if (!results) continue;
    const p99 = medianOf(results.map((r) => r.load.latency.p99));
    targets.push([
      `${key.toUpperCase().padEnd(4)} p99 @ ${CONNECTIONS} connections (median)`,
      `${fmt(p99, 1)} ms`,
      `< ${TARGET_P99_MS} ms`,
      verdict(p99 < TARGET_P99_MS, clean(results)),
    ]);
  }
  if (targets.length > 1) {
    console.log('\nTargets');
    console.log(table(targets));
    // Closed loop: mean latency = connections / throughput (Little's law), so a p99 goal at a
    // fixed connection count is a throughput goal in disguise. Say which.
    const needs: string[] = [];
    for (const key of ['reference', 'get', 'post'] as const) {
      const p = phases.get(key);
      if (!p || !p.load.latency.avg) continue;
      const spread = p.load.latency.p99 / p.load.latency.avg;
      const rps = (CONNECTIONS * spread * 1000) / TARGET_P99_MS;
      needs.push(`${key} ~${fmt(rps)} req/s (measured ${fmt(p.load.rps)})`);
    }
    if (needs.length)
      console.log(
        `p99 < ${TARGET_P99_MS} ms at ${CONNECTIONS} connections needs, at each phase's p99/mean ` +
          `spread: ${needs.join(', ')}.`,
      );
  }

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

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  warnings = [];
  let routing: RoutingResult | null = null;
  if (ONLY.has('routing')) {
    process.stderr.write('  routing check...\n');
    routing = routingCheck();
  }
  const rounds = new Map<string, PhaseResult[]>();
  const add = (key: string, r: PhaseResult) => rounds.set(key, [...(rounds.get(key) ?? []), r]);
  for (let round = 1; round <= ROUNDS; round++) {
    if (ROUNDS > 1) process.stderr.write(`round ${round} of ${ROUNDS}\n`);
    if (ONLY.has('reference')) add('reference', await referencePhase());
    if (ONLY.has('get')) add('get', await appGetPhase());
    if (ONLY.has('post')) add('post', await appPostPhase());
  }
  report(routing, rounds);
  const phases = new Map([...rounds].map(([key, results]) => [key, medianRound(results)]));
  if (process.env.BENCH_JSON) {
    const out = {
      rounds: ROUNDS,
      seconds: SECONDS,
      connections: CONNECTIONS,
      ablate: ABLATE,
      routing,
      phases: Object.fromEntries(
        [...phases].map(([key, { label, load: r, cpu, ...p }]) => [
          key,
          {
            label,
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
