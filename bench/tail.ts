// Where the POST tail comes from (issue #20): `node bench/tail.ts [seconds] [connections]` starts
// scripts/bench-server.ts with bench/tail-hooks.ts loaded (SQLite, the V8 flags of `npm start`),
// sends the bench's POST /api/v3/users load with autocannon (2 s warm-up, then `seconds`, at
// `connections`, default 8 and 10), then prints the server-side latency, the synchronous stretches
// (group commits, audit writes, GC pauses, slow statements outside a group) and, for the slowest
// 1% of requests against the middle ones, how much of their time overlapped each kind of stretch.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createRequire } from 'node:module';
import { scriptNodeFlags } from './node-flags.ts';

// CommonJS, no bundled types (scripts/bench.ts types the part it uses).
const autocannon = createRequire(import.meta.url)('autocannon') as (
  opts: object,
  cb: (err: unknown) => void,
) => { on(event: 'response', fn: (...a: any[]) => void): void };
const SECONDS = Number(process.argv[2] ?? 8);
const CONNECTIONS = Number(process.argv[3] ?? 10);
const WARMUP = 2;
const root = path.resolve(import.meta.dirname, '..');
const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'school-tail-')), 'trace.json');

const child = spawn(
  process.execPath,
  [
    ...scriptNodeFlags('start'),
    '--import',
    path.join(root, 'bench/tail-hooks.ts'),
    path.join(root, 'scripts/bench-server.ts'),
  ],
  { cwd: root, env: { ...process.env, BENCH_TAIL_OUT: out }, stdio: ['pipe', 'pipe', 'inherit'] },
);
const exited = new Promise((resolve) => child.on('exit', resolve));
const info: { port: number; secret: string } = await new Promise((resolve, reject) => {
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.startsWith('BENCH_READY ')) resolve(JSON.parse(line.slice(12)));
  });
  void exited.then(() => reject(new Error('bench-server exited before it was ready')));
});

const runId = Date.now().toString(36);
let n = 0;
const client: number[] = [];
let windowStart = Infinity;
await new Promise<void>((resolve, reject) => {
  const instance = autocannon(
    {
      url: `http://127.0.0.1:${info.port}`,
      connections: CONNECTIONS,
      duration: WARMUP + SECONDS,
      requests: [
        {
          method: 'POST',
          path: '/api/v3/users',
          setupRequest: (req: any) => {
            const i = ++n;
            return {
              ...req,
              headers: {
                ...req.headers,
                authorization: `Bearer ${info.secret}`,
                accept: 'application/json',
                'content-type': 'application/json',
                'idempotency-key': `tail-${runId}-${i}`,
              },
              body: JSON.stringify({ name: `Tail ${i}`, email: `tail-${runId}-${i}@example.com` }),
            };
          },
        },
      ],
    },
    (err: unknown) => (err ? reject(err) : resolve()),
  );
  setTimeout(() => (windowStart = performance.now()), WARMUP * 1000);
  instance.on('response', (_c: unknown, status: number, _b: unknown, ms: number) => {
    if (status !== 201) throw new Error(`status ${status}`);
    if (performance.now() - ms >= windowStart) client.push(ms);
  });
});
child.stdin!.end();
await exited;

const trace = JSON.parse(fs.readFileSync(out, 'utf8'));
fs.rmSync(path.dirname(out), { recursive: true, force: true });

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const f = (x: number) => x.toFixed(2);
const tuples = (xs: any[], k: number) => {
  const r: any[][] = [];
  for (let i = 0; i < xs.length; i += k) r.push(xs.slice(i, i + k));
  return r;
};

// The server's own clock: the window is the last SECONDS of its requests.
const reqs = tuples(trace.requests, 8) as [number, number][];
const end = Math.max(...reqs.map((r) => r[1]));
const from = end - SECONDS * 1000;
const win = reqs.filter((r) => r[0] >= from);
const lat = win.map((r) => r[1] - r[0]);
const inWin = (xs: number[][]) => xs.filter((x) => x[0]! >= from);
const groups = inWin(tuples(trace.groups, 4));
const stretches = inWin(tuples(trace.stretches, 2));
const audits = inWin(tuples(trace.audits, 3));
const gcs = inWin(tuples(trace.gcs, 3));
const slow = inWin(tuples(trace.slow, 3));

const line = (label: string, xs: number[]) =>
  console.log(
    `${label.padEnd(34)} n=${String(xs.length).padStart(6)}  mean ${f(mean(xs))}  p50 ${f(pct(xs, 50))}  p90 ${f(pct(xs, 90))}  p99 ${f(pct(xs, 99))}  max ${f(Math.max(...xs))}  total ${f(xs.reduce((a, b) => a + b, 0))} ms`,
  );
console.log(
  `${SECONDS} s at ${CONNECTIONS} connections: ${(win.length / SECONDS).toFixed(0)} req/s`,
);
line('client latency ms', client);
console.log(`  client p99/mean ${f(pct(client, 99) / mean(client))}`);
line('server latency ms', lat);
// The request's stages: before its transaction, waiting for its group, its job, the rest of the
// group and the commit, between commit and audit record, waiting for the audit write, to the end.
const st = win as unknown as number[][];
const stage = (label: string, a: number, b: number) =>
  line(
    `  ${label}`,
    st.filter((r) => !Number.isNaN(r[a]! + r[b]!)).map((r) => r[b]! - r[a]!),
  );
stage('start -> tx queued', 0, 2);
stage('tx queued -> job starts', 2, 3);
stage('job runs', 3, 4);
stage('job ends -> group settled', 4, 5);
stage('group settled -> audit recorded', 5, 6);
stage('audit recorded -> written', 6, 7);
stage('audit written -> end', 7, 1);
line(
  'group commit ms (BEGIN..COMMIT)',
  stretches.map((s) => s[1]! - s[0]!),
);
line(
  'group size (jobs)',
  groups.map((g) => g[2]!),
);
line(
  'COMMIT ms',
  groups.map((g) => g[3]!),
);
line(
  'audit write ms (flush)',
  audits.map((a) => a[1]! - a[0]!),
);
line(
  'audit entries per write',
  audits.map((a) => a[2]!),
);
for (const [kind, name] of [
  [1, 'minor'],
  [2, 'major'],
  [4, 'incremental'],
  [8, 'weak'],
] as const)
  line(
    `GC ${name} ms`,
    gcs.filter((g) => g[2] === kind).map((g) => g[1]! - g[0]!),
  );
const bySource = new Map<string, number[]>();
for (const [t0, t1, text] of slow) {
  const k = String(text).replace(/\s+/g, ' ');
  bySource.set(k, [...(bySource.get(k) ?? []), t1 - t0]);
}
for (const [k, xs] of [...bySource].sort((a, b) => b[1].length - a[1].length).slice(0, 6))
  line(`stmt ${k.slice(0, 30)}`, xs);

// Overlap of each request's [start, end] with each kind of stretch.
const overlap = (r: [number, number], xs: number[][]) =>
  xs.reduce((sum, x) => sum + Math.max(0, Math.min(r[1], x[1]!) - Math.max(r[0], x[0]!)), 0);
const kinds: [string, number[][]][] = [
  ['groups', stretches],
  ['audit', audits],
  ['gc', gcs],
  ['stmt', slow],
];
const sorted = win.map((r, i) => ({ r, ms: lat[i]! })).sort((a, b) => a.ms - b.ms);
// The stages' means (as above) over a set of requests; a request without a stage is left out.
const STAGES = [0, 2, 3, 4, 5, 6, 7, 1];
const stageMeans = (set: typeof sorted) =>
  STAGES.slice(1)
    .map((b, i) => {
      const a = STAGES[i]!;
      const xs = set.map((s) => (s.r as number[])[b]! - (s.r as number[])[a]!);
      return f(mean(xs.filter((x) => !Number.isNaN(x))));
    })
    .join(' / ');
const share = (label: string, set: typeof sorted) => {
  const parts = kinds.map(([k, xs]) => `${k} ${f(mean(set.map((s) => overlap(s.r, xs))))}`);
  console.log(
    `${label.padEnd(22)} latency ${f(mean(set.map((s) => s.ms)))} ms; overlap: ${parts.join(', ')}; stages ${stageMeans(set)}`,
  );
};
share('slowest 1%', sorted.slice(Math.floor(sorted.length * 0.99)));
share('p90-p99', sorted.slice(Math.floor(sorted.length * 0.9), Math.floor(sorted.length * 0.99)));
share('p45-p55', sorted.slice(Math.floor(sorted.length * 0.45), Math.floor(sorted.length * 0.55)));
