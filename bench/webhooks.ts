// Webhook deliveries to a local receiver: event-to-delivery latency (an event recorded in its own
// transaction, a few ms apart: receiver arrival - commit) and throughput (a burst of events, all
// recorded at once: deliveries per second until the receiver has them all). Builds the services
// as src/worker.ts does, on a fresh database, with the workers in this process, one account and
// one endpoint (every event type) on 127.0.0.1. Prints one JSON line on stdout:
//   {"engine","latency":{"events","p50","p90","p99","max"},
//    "burst":{"events","seconds","perSecond","cpuMsPerDelivery","queriesPerDelivery",
//             "workersCpuMsPerDelivery"?,"databaseCpuMsPerDelivery"?}}
// cpuMsPerDelivery: this process's CPU time (user + system) during the burst, per delivery; the
// receiver runs in this process too, so it counts its side of each request as well.
// workersCpuMsPerDelivery (workers > 0): the worker processes' together. databaseCpuMsPerDelivery
// (PostgreSQL on this machine): the database's backends' (bench/pg-backends.ts). Their sum with
// cpuMsPerDelivery is what a delivery costs the machine: on a shared machine a steadier figure
// than deliveries per second.
//
//   [WEBHOOK_PER_ENDPOINT=n] node bench/webhooks.ts [database=sqlite] [events=200] [burst=1000] [workers=0]
// database: `sqlite` (a fresh file in a temporary folder) or a postgres:// URL (a `bench_<random>`
// schema, made and dropped here). workers (PostgreSQL): the deliveries are made by that many
// `npm run worker` processes (src/worker.ts) on the same schema instead of this process, which
// then only records the events and receives.
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createBenchSchema } from './pg-schema.ts';
import { backendCpuMs, PgBackendCpu } from './pg-backends.ts';
import { pidCpuMs } from '../scripts/proc-cpu.ts';
import { transaction } from '../src/db/tx.ts';
import { scriptNodeFlags } from './node-flags.ts';
import { benchServices } from './services.ts';
import { startWorkers } from '../src/tasks/index.ts';

const database = process.argv[2] ?? 'sqlite';
const EVENTS = Number(process.argv[3] ?? 200);
const BURST = Number(process.argv[4] ?? 1000);
const WORKERS = database === 'sqlite' ? 0 : Number(process.argv[5] ?? 0);
const GAP_MS = 5;
const WARMUP = 20;
const WAIT_MS = 120_000;

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const round = (ms: number) => Math.round(ms * 100) / 100;

// The receiver: when each event id arrived.
const arrived = new Map<string, number>();
const receiver = http.createServer((req, res) => {
  const id = String(req.headers['webhook-id']);
  req.resume();
  req.on('end', () => {
    if (!arrived.has(id)) arrived.set(id, now());
    res.writeHead(204).end();
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

// Every process of one database shares its secrets key (a worker with another refuses to start).
const env = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  SECRETS_KEY: crypto.randomBytes(32).toString('base64url'),
  // The per-endpoint limit, when the run sets it (its default otherwise), in every process.
  ...(process.env.WEBHOOK_PER_ENDPOINT
    ? { WEBHOOK_PER_ENDPOINT: process.env.WEBHOOK_PER_ENDPOINT }
    : {}),
};
const shared = WORKERS ? await createBenchSchema(database) : null;
const { services, db, postgres, close } = await benchServices(database, 'webhooks', {
  env,
  schema: shared?.schema,
});
const children: ChildProcess[] = [];
try {
  const { id: accountId } = await services.accounts.createAccount({ name: 'Bench school' });
  await services.webhooks.create(accountId, { url, event_types: ['*'] });
  if (!WORKERS) await startWorkers(services);
  for (let i = 0; i < WORKERS; i++)
    children.push(
      spawn(process.execPath, [...scriptNodeFlags('worker'), 'src/worker.ts'], {
        cwd: path.resolve(import.meta.dirname, '..'),
        env: {
          ...process.env,
          ...env,
          DATABASE_URL: database,
          DATABASE_SCHEMA: shared!.schema,
          // BENCH_WORKER_LOG=warn: the worker processes' warnings and errors on stderr.
          LOG_LEVEL: process.env.BENCH_WORKER_LOG ?? 'silent',
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      }),
    );

  const data = (i: number) => ({ user_id: String(i + 1), tag: { id: '1', name: `t${i}` } });
  const record = (i: number) =>
    transaction(db, (tx) =>
      services.events.record({ tx }, { accountId, type: 'tag.removed', data: data(i) }),
    );
  const waitFor = async (ids: string[]) => {
    const deadline = Date.now() + WAIT_MS;
    // Walks the list once (checking all of it every 2 ms cost the bench more than deliveries did).
    let i = 0;
    for (;;) {
      while (i < ids.length && arrived.has(ids[i]!)) i++;
      if (i === ids.length) break;
      if (Date.now() > deadline) throw new Error(`only ${arrived.size} deliveries arrived`);
      await sleep(2);
    }
  };

  // Worker processes start (the app's modules, the job engine) before they deliver: one
  // event delivered first says they are up.
  if (WORKERS) await waitFor([`evt_${(await record(BURST + WARMUP + EVENTS)).id}`]);

  // Latency: one event per transaction, GAP_MS apart.
  const committed = new Map<string, number>();
  for (let i = 0; i < WARMUP + EVENTS; i++) {
    const e = await record(i);
    if (i >= WARMUP) committed.set(`evt_${e.id}`, now());
    await sleep(GAP_MS);
  }
  await waitFor([...committed.keys()]);
  const latencies = [...committed].map(([id, at]) => arrived.get(id)! - at).sort((a, b) => a - b);

  // Throughput: the burst is recorded in transactions of 100 events, then delivered.
  // Statements the app sent through its own pool meanwhile (not graphile-worker's: its pool is
  // its own), per delivery: the recording transactions' share included.
  let queries = 0;
  // BENCH_QUERY_LOG=1: the statements of the burst by text, most frequent first, on stderr.
  const texts = new Map<string, number>();
  db.on('query', (q: { sql: string }) => {
    queries++;
    if (process.env.BENCH_QUERY_LOG) texts.set(q.sql, (texts.get(q.sql) ?? 0) + 1);
  });
  const backends = postgres ? new PgBackendCpu(database) : null;
  const workersCpu = () => children.reduce((a, c) => a + (pidCpuMs(c.pid) ?? NaN), 0);
  const before = { backends: await backends?.sample(), workers: workersCpu() };
  const started = now();
  const cpu = process.cpuUsage();
  const ids: string[] = [];
  for (let i = 0; i < BURST; i += 100) {
    const batch = await transaction(db, async (tx) => {
      const out = [];
      for (let j = i; j < Math.min(BURST, i + 100); j++)
        out.push(
          await services.events.record({ tx }, { accountId, type: 'tag.removed', data: data(j) }),
        );
      return out;
    });
    ids.push(...batch.map((e) => `evt_${e.id}`));
  }
  await waitFor(ids);
  const seconds = (now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000;
  const databaseMs = backends
    ? backendCpuMs(before.backends ?? null, await backends.sample())
    : null;
  const workersMs = workersCpu() - before.workers;
  await backends?.close();
  const perDelivery = (ms: number) => Math.round((ms / BURST) * 1000) / 1000;

  for (const [sql, n] of [...texts].sort((a, b) => b[1] - a[1]))
    process.stderr.write(`${(n / BURST).toFixed(2)}  ${sql.slice(0, 160)}\n`);
  console.log(
    JSON.stringify({
      engine: postgres ? 'postgres' : 'sqlite',
      latency: {
        events: latencies.length,
        p50: round(pct(latencies, 50)),
        p90: round(pct(latencies, 90)),
        p99: round(pct(latencies, 99)),
        max: round(latencies[latencies.length - 1]!),
      },
      burst: {
        events: BURST,
        seconds: round(seconds),
        perSecond: Math.round(BURST / seconds),
        cpuMsPerDelivery: perDelivery(cpuMs),
        queriesPerDelivery: Math.round((queries / BURST) * 10) / 10,
        ...(WORKERS && Number.isFinite(workersMs)
          ? { workersCpuMsPerDelivery: perDelivery(workersMs) }
          : {}),
        ...(databaseMs !== null ? { databaseCpuMsPerDelivery: perDelivery(databaseMs) } : {}),
      },
    }),
  );
  await services.jobs.close();
  await services.webhookDispatcher.drain();
  await services.events.close();
} finally {
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(
    children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null)),
  );
  await close();
  await shared?.drop();
  receiver.closeAllConnections();
  receiver.close();
}
