// Loaded with `node --import ./bench/tail-hooks.ts scripts/bench-server.ts` by bench/tail.ts: a
// timeline of the server's synchronous stretches, to line the slow requests up with what held the
// event loop while they waited. Records, in performance.now() ms: each HTTP request (start to
// response finish, from node:http's diagnostics channels), each SQLite group commit (its size, its
// length, its COMMIT's length), each audit group write, and each GC pause (perf_hooks 'gc');
// written as JSON to BENCH_TAIL_OUT when the process exits. Profiling only: it patches prototypes.
import { AsyncLocalStorage } from 'node:async_hooks';
import dc from 'node:diagnostics_channel';
import fs from 'node:fs';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { SqliteTransactions } from '../src/db/sqlite-transactions.ts';
import { AuditService } from '../src/domain/audit/repo.ts';

const out = process.env.BENCH_TAIL_OUT;
if (!out) throw new Error('bench/tail-hooks.ts: BENCH_TAIL_OUT is not set');

// Per request: start, end, then its stages (NaN when absent): transaction queued, its job started,
// its job ended, its group committed (the promise settled), audit recorded, audit written.
const requests: number[] = [];
const STAGES = 6;
const current = new AsyncLocalStorage<number[]>();
const groups: number[] = []; // start, end, jobs, commit ms
const audits: number[] = []; // start, end, entries
const gcs: number[] = []; // start, end, kind (1 minor, 2 major, 4 incremental, 8 weak)
const started = new WeakMap<object, number>();

const stages = new WeakMap<object, number[]>();
dc.subscribe('http.server.request.start', (m: any) => {
  started.set(m.response, performance.now());
  const s = new Array<number>(STAGES).fill(NaN);
  stages.set(m.response, s);
  // The 'request' event is emitted right after, in this same synchronous stretch.
  current.enterWith(s);
});
dc.subscribe('http.server.response.finish', (m: any) => {
  const t0 = started.get(m.response);
  if (t0 !== undefined) requests.push(t0, performance.now(), ...stages.get(m.response)!);
});

const txRun = SqliteTransactions.prototype.run;
SqliteTransactions.prototype.run = function (this: any, fn: any) {
  const s = current.getStore();
  if (!s || !Number.isNaN(s[0])) return txRun.call(this, fn);
  s[0] = performance.now();
  return txRun
    .call(this, async (tx: any) => {
      s[1] = performance.now();
      try {
        return await fn(tx);
      } finally {
        s[2] = performance.now();
      }
    })
    .finally(() => (s[3] = performance.now()));
} as any;

const record = AuditService.prototype.record;
AuditService.prototype.record = function (this: any, entry: any) {
  const s = current.getStore();
  if (s) s[4] = performance.now();
  return record.call(this, entry).finally(() => s && (s[5] = performance.now()));
};

new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = (e as any).detail?.kind ?? 0;
    gcs.push(e.startTime, e.startTime + e.duration, kind);
  }
}).observe({ entryTypes: ['gc'] });
void constants;

// better-sqlite3's statements share one prototype: a group's stretch is BEGIN IMMEDIATE to the
// end of its COMMIT (the jobs between run on microtasks only); statements outside a group that
// take over 0.2 ms are recorded with their text's start.
let commitMs = 0;
let begun = 0;
const slow: (number | string)[] = []; // start, end, text
const probe = new Database(':memory:');
const Statement = Object.getPrototypeOf(probe.prepare('SELECT 1'));
probe.close();
for (const method of ['run', 'get', 'all'] as const) {
  const original = Statement[method];
  Statement[method] = function (this: { source: string }, ...args: unknown[]) {
    const t0 = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      const t1 = performance.now();
      if (this.source === 'BEGIN IMMEDIATE') begun = t0;
      else if (this.source === 'COMMIT') {
        commitMs = t1 - t0;
        stretches.push(begun, t1);
      } else if (t1 - t0 > 0.2 && !begun) slow.push(t0, t1, this.source.slice(0, 60));
      if (this.source === 'COMMIT' || this.source === 'ROLLBACK') begun = 0;
    }
  };
}
const stretches: number[] = []; // BEGIN to COMMIT end

const group = (SqliteTransactions.prototype as any).group;
(SqliteTransactions.prototype as any).group = async function (this: any) {
  const t0 = performance.now();
  const jobs = Math.min(this.queue.length, 64);
  commitMs = 0;
  try {
    return await group.call(this);
  } finally {
    groups.push(t0, performance.now(), jobs, commitMs);
  }
};

const flush = (AuditService.prototype as any).flush;
(AuditService.prototype as any).flush = async function (this: any) {
  const t0 = performance.now();
  const n = this.pending.length;
  try {
    return await flush.call(this);
  } finally {
    audits.push(t0, performance.now(), n);
  }
};

process.on('exit', () => {
  fs.writeFileSync(out, JSON.stringify({ requests, groups, audits, gcs, stretches, slow }));
});
