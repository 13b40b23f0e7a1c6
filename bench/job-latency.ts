// Enqueue-to-start latency of the job engine (src/jobs/): how long a job committed by a request
// waits before a worker of the same process starts it. Builds the services as src/worker.ts does,
// on a fresh database, registers one no-op task, then enqueues jobs one at a time, each in its own
// transaction (as a request does), a few ms apart, and records (task start - enqueue), where
// "enqueue" is the moment the payload is built inside the transaction, before its commit.
// Prints one JSON line on stdout (scripts/bench.ts reads it; its `jobs` phase runs this):
//   {"engine","jobs","warmup","gapMs","p50","p90","p99","max","mean"}   (latencies in ms)
//
//   node bench/job-latency.ts [database=sqlite] [jobs=200] [gapMs=5]
// database: `sqlite` (a fresh file in a temporary folder) or a postgres:// URL. On PostgreSQL the
// jobs run in the schema BENCH_JOBS_SCHEMA (made and dropped by the caller) or, without it, in a
// `bench_<random>` schema made and dropped here (bench/pg-schema.ts).
import { transaction } from '../src/db/tx.ts';
import { benchServices } from './services.ts';

const database = process.argv[2] ?? 'sqlite';
const JOBS = Number(process.argv[3] ?? 200);
const GAP_MS = Number(process.argv[4] ?? 5);
/** Not recorded: the first jobs pay for JIT compilation and the first statements. */
const WARMUP = 20;
const WAIT_MS = 60_000;
if (!Number.isInteger(JOBS) || JOBS < 1) throw new Error('jobs must be a positive integer');
if (!Number.isFinite(GAP_MS) || GAP_MS < 0) throw new Error('gapMs must be >= 0');

/** Wall-clock ms with sub-ms resolution (both ends are in this process). */
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const { services, db, postgres, close } = await benchServices(database, 'jobs', {
  schema: process.env.BENCH_JOBS_SCHEMA || undefined,
});
try {
  const latencies: number[] = [];
  let finished = 0;
  let failed: unknown = null;
  await services.jobs.start(
    {
      'bench.noop': async (payload: { at: number; warm: boolean }) => {
        const ms = now() - payload.at;
        if (!payload.warm) latencies.push(ms);
        finished++;
      },
    },
    [],
  );

  const total = WARMUP + JOBS;
  try {
    for (let i = 0; i < total; i++) {
      const warm = i < WARMUP;
      await transaction(db, (tx) =>
        services.jobs.enqueue({ tx }, 'bench.noop', { at: now(), warm }),
      );
      await sleep(GAP_MS);
    }
    const deadline = Date.now() + WAIT_MS;
    while (finished < total && Date.now() < deadline) await sleep(5);
    if (finished < total)
      failed = new Error(`only ${finished} of ${total} jobs started within ${WAIT_MS / 1000} s`);
  } catch (err) {
    failed = err;
  }
  await services.jobs.close();
  if (failed) throw failed;

  const sorted = Float64Array.from(latencies).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const round = (n: number) => Math.round(n * 1000) / 1000;
  const result = {
    engine: postgres ? 'postgres' : 'sqlite',
    jobs: JOBS,
    warmup: WARMUP,
    gapMs: GAP_MS,
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    max: round(sorted[sorted.length - 1]!),
    mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await close();
}
process.exit(0);
