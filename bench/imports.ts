// An import of N rows (analysis, then one processing attempt) and an export of the N users it
// created, on a fresh database with the workers in this process. Each phase reports rows/s and
// this process's peak RSS when it ended (peak RSS only grows, so the export's figure covers the
// whole run) and the CPU it took (all threads: the checkpointer's too). Flat memory means the peak
// at 100,000 rows stays within 64 MiB of the peak at 1,000: run it once per size, each in its own
// process. Prints one JSON line on stdout:
//   {"engine","rows","analysis":{"seconds","cpuSeconds","rowsPerSecond","peakRssMiB"},
//    "processing":{...},"export":{...}}
//
//   node bench/imports.ts [database=sqlite] [rows=100000] [tags=0]
// `tags`: how many tags the rows' delivery assigns to each student (0: products only).
// BENCH_MEMORY_MS=1000: also writes `process.memoryUsage()` to stderr every that many ms, with the
// phase and, on Linux, `malloc`: the resident size of the main thread's malloc heap ([heap] in
// /proc/self/smaps, where SQLite's page caches live). Whether a peak is V8's heap or outside it.
import fs from 'node:fs';
import { filesRepo } from '../src/domain/files/repo.ts';
import { credentialsRepo } from '../src/domain/credentials/repo.ts';
import { newStorageKey } from '../src/domain/files/service.ts';
import type { AuthContext } from '../src/domain/credentials/auth.ts';
import { transaction } from '../src/db/tx.ts';
import { startWorkers } from '../src/tasks/index.ts';
import { benchServices } from './services.ts';

const database = process.argv[2] ?? 'sqlite';
const ROWS = Number(process.argv[3] ?? 100_000);
const TAGS = Number(process.argv[4] ?? 0);

const peakMiB = () => Math.round((process.resourceUsage().maxRSS / 1024) * 10) / 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let current = 'setup';
const mib = (bytes: number) => (bytes / 1048576).toFixed(1);
/** Rss of the [heap] mapping, in MiB, or '?' where /proc/self/smaps cannot say. */
function mallocHeap(): string {
  try {
    const m = /\[heap\]\n(?:.*\n)*?Rss:\s+(\d+) kB/.exec(
      fs.readFileSync('/proc/self/smaps', 'utf8'),
    );
    return m ? mib(Number(m[1]) * 1024) : '?';
  } catch {
    return '?';
  }
}
const sampleMs = Number(process.env.BENCH_MEMORY_MS ?? 0);
const sampler =
  sampleMs > 0
    ? setInterval(() => {
        const m = process.memoryUsage();
        process.stderr.write(
          `memory ${current}: rss ${mib(m.rss)} heapTotal ${mib(m.heapTotal)} heapUsed ` +
            `${mib(m.heapUsed)} external ${mib(m.external)} arrayBuffers ${mib(m.arrayBuffers)} ` +
            `malloc ${mallocHeap()} peak ${peakMiB()}\n`,
        );
      }, sampleMs).unref()
    : null;

/** The CSV, generated as it is written: never whole in memory here either. */
async function* csv(rows: number) {
  const enc = new TextEncoder();
  yield enc.encode('email,product_external_id,status\n');
  for (let i = 0; i < rows; i += 1000) {
    let chunk = '';
    for (let j = i; j < Math.min(rows, i + 1000); j++)
      chunk += `s${j}@bench.example,BENCH-1,active\n`;
    yield enc.encode(chunk);
  }
}

const bench = await benchServices(database, 'imports');
const s = bench.services;
try {
  const { id: accountId } = await s.accounts.createAccount({ name: 'Bench school' });
  const root = await s.accounts.createRootCredential({ accountId, permissions: ['*'] });
  const credential = await credentialsRepo.get({ tx: s.db }, accountId, root.id);
  const auth = { account: { id: accountId }, credential, human: null } as unknown as AuthContext;
  const product = await s.catalog.create(accountId, { name: 'Bench course' });
  const tagIds: string[] = [];
  for (let i = 0; i < TAGS; i++)
    tagIds.push(String((await s.tags.create(accountId, { name: `Bench tag ${i}` })).id));
  await s.deliveries.create(accountId, {
    gateway: 'generic',
    name: 'Bench',
    external_ids: ['BENCH-1'],
    products: [{ product_id: String(product.id) }],
    ...(TAGS ? { tag_ids: tagIds } : {}),
  });
  const key = newStorageKey(accountId);
  await s.files.storage.put(key, csv(ROWS));
  const fileId = await transaction(s.db, (tx) =>
    filesRepo.insert(
      { tx },
      {
        accountId,
        purpose: 'import',
        filename: 'bench.csv',
        contentType: 'text/csv',
        size: 0,
        sha256: '0'.repeat(64),
        createdAt: new Date().toISOString(),
        storageKey: key,
      },
    ),
  );
  await startWorkers(s);

  const settle = async (operationId: number) => {
    for (;;) {
      const op = await s.operations.get(accountId, operationId);
      if (!['queued', 'running'].includes(op.status)) return op;
      await sleep(50);
    }
  };
  const phase = async (name: string, rows: number, run: () => Promise<unknown>) => {
    current = name;
    const started = performance.now();
    const cpu = process.cpuUsage();
    await run();
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    return {
      seconds: Math.round(seconds * 100) / 100,
      cpuSeconds: Math.round((used.user + used.system) / 10_000) / 100,
      rowsPerSecond: Math.round(rows / seconds),
      peakRssMiB: peakMiB(),
    };
  };

  const imp = await s.imports.create(auth, { file_id: String(fileId), type: 'students_access' });
  const analysis = await phase('analysis', ROWS, async () => {
    const op = await settle((await s.imports.requestAnalysis(auth, imp.id)).id);
    if (op.status !== 'succeeded') throw new Error(`analysis ${op.status}`);
  });
  const processing = await phase('processing', ROWS, async () => {
    const attempt = await s.imports.createAttempt(auth, imp.id);
    const op = await settle(attempt.operationId!);
    if (op.status !== 'succeeded' || op.done !== ROWS) throw new Error(`processing ${op.status}`);
  });
  const exported = await phase('export', ROWS, async () => {
    const e = await s.exports.create(auth, { resource: 'users', columns: ['id', 'email', 'name'] });
    await settle(e.operationId!);
    const done = await s.exports.get(accountId, e.id);
    if (done.status !== 'completed' || done.total !== ROWS)
      throw new Error(`export ${done.status}`);
  });
  console.log(
    JSON.stringify({
      engine: bench.postgres ? 'postgres' : 'sqlite',
      rows: ROWS,
      analysis,
      processing,
      export: exported,
    }),
  );
} finally {
  if (sampler) clearInterval(sampler);
  await s.jobs.close();
  await bench.close();
}
