// Runs every uvu suite under test/ on SQLite, then again on PostgreSQL when TEST_DATABASE_URL is
// set, and ends with one line: `N passed, M failed`.
//
// The files are split into TEST_JOBS shards (default: the machine's cores), each run by one uvu
// process, side by side: suites spend much of their time waiting on sockets, timers and the job
// engine. A file's output is printed whole when the next one starts (never interleaved), and the
// slowest files are listed at the end of each pass. Timings are kept between runs to balance the
// shards.
//
// A file whose header has the line `// engine: any` runs in the SQLite pass only: it never opens
// the test database (contract, mock, unit and process suites on their own files), so a second
// pass on PostgreSQL would test nothing new. test/timings.json holds the files' times from a
// recent whole run (`npm test -- --save-timings` rewrites it) so that a clean clone balances its
// shards as well as a machine that has run the suite before.
//
//   npm test                     every suite
//   npm test -- users            suites whose path matches (a regular expression, as uvu reads it)
//   npm test -- --watch [users]  run again whenever src/ or test/ changes
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pidCpuMs } from './proc-cpu.ts';
import { postgresProblem } from './test-preflight.ts';

interface Tally {
  passed: number;
  failed: number;
  skipped: number;
}

interface FileRun extends Tally {
  name: string;
  ms: number;
  /** CPU seconds of the shard process and the children it reaped meanwhile (Linux only). */
  cpu?: number;
}

const root = path.resolve(import.meta.dirname, '..');
const testDir = path.join(root, 'test');
const uvuBin = path.join(root, 'node_modules', 'uvu', 'bin.js');
const timingsFile = path.join(root, 'node_modules', '.cache', 'school-test-times.json');
const committedTimings = path.join(testDir, 'timings.json');
const jobs = Math.max(1, Number(process.env.TEST_JOBS) || os.availableParallelism());

function testFiles(pattern: RegExp): string[] {
  const found: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const name = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path.join(dir, entry.name), name);
      else if (/\.test\.ts$/.test(name) && pattern.test(name)) found.push(name);
    }
  };
  walk(testDir, '');
  return found.sort();
}

function readJson(file: string): Record<string, number> {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
}

/** This machine's last times, over the committed ones. */
const readTimings = () => ({ ...readJson(committedTimings), ...readJson(timingsFile) });

/** Files that never open the test database: `// engine: any` among their first lines. */
function engineIndependent(name: string): boolean {
  const head = fs.readFileSync(path.join(testDir, name), 'utf8').split('\n', 30);
  return head.some((line) => line.trim() === '// engine: any');
}

function writeTimings(runs: FileRun[], save: boolean): void {
  const times = Object.fromEntries(runs.map((r) => [r.name, Math.round(r.ms)]));
  fs.mkdirSync(path.dirname(timingsFile), { recursive: true });
  fs.writeFileSync(timingsFile, JSON.stringify({ ...readJson(timingsFile), ...times }));
  if (!save) return;
  const all = { ...readJson(committedTimings), ...times };
  const sorted = Object.fromEntries(
    Object.keys(all)
      .sort()
      .map((k) => [k, all[k]]),
  );
  fs.writeFileSync(committedTimings, JSON.stringify(sorted, null, 2) + '\n');
}

/** CPU seconds of the shard process and the children it reaped (servers, CLIs, bash, npm). */
function cpuSeconds(pid: number | undefined): number | undefined {
  const ms = pidCpuMs(pid, { children: true });
  return ms === null ? undefined : ms / 1000;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Runs a shard of files in one uvu process (a process per file paid the app's start-up, its
 * modules and the contract's compiled validators, a hundred times: more than the tests). uvu prints
 * each file's name as it starts it: that splits the output, and the time, by file.
 */
function runShard(
  names: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ runs: FileRun[]; tally: Tally }> {
  const pattern = `^(${names.map(escape).join('|')})$`;
  const known = new Set(names);
  return new Promise((resolve) => {
    // Node strips the types itself (as `npm start` runs the server): no tsx loader in between.
    const child = spawn(process.execPath, [uvuBin, 'test', pattern], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const runs: FileRun[] = [];
    let all = '';
    let current: { name: string; started: number; cpu?: number; out: string } | undefined;
    let pending = '';
    const finish = () => {
      if (!current) return;
      const ms = performance.now() - current.started;
      const plain = current.out.replace(/\x1b\[[0-9;]*m/g, '');
      const failed = (plain.match(/ FAIL /g) ?? []).length;
      const now = cpuSeconds(child.pid);
      const cpu = now !== undefined && current.cpu !== undefined ? now - current.cpu : undefined;
      const cpuNote = cpu === undefined ? '' : `, ${cpu.toFixed(1)} s CPU`;
      process.stdout.write(
        `\n--- ${current.name} (${(ms / 1000).toFixed(1)} s${cpuNote})\n${current.out}`,
      );
      runs.push({ name: current.name, ms, cpu, passed: 0, failed, skipped: 0 });
      current = undefined;
    };
    const take = (text: string) => {
      all += text;
      pending += text;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const plain = line.replace(/\x1b\[[0-9;]*m/g, '').trim();
        if (known.has(plain)) {
          finish();
          current = {
            name: plain,
            started: performance.now(),
            cpu: cpuSeconds(child.pid),
            out: '',
          };
        }
        // uvu's summary: the last file ends here, not when the process exits.
        if (/^Total:\s+\d+/.test(plain)) finish();
        // Its last line. What the suites left open (keep-alive sockets, idle pool timers) can hold
        // the process for minutes after every result is in; nothing is left to wait for.
        if (/^Duration:\s+[\d.]+ms/.test(plain))
          setTimeout(() => child.kill('SIGKILL'), 2000).unref();
        if (current) current.out += line + '\n';
        else process.stdout.write(line + '\n');
      }
    };
    child.stdout.on('data', (c: Buffer) => take(c.toString()));
    child.stderr.on('data', (c: Buffer) => take(c.toString()));
    child.on('close', (code, signal) => {
      take('\n');
      finish();
      const plain = all.replace(/\x1b\[[0-9;]*m/g, '');
      const num = (label: string) =>
        Number(plain.match(new RegExp(`${label}:\\s+(\\d+)`))?.[1] ?? 0);
      // uvu's Total counts the tests that ran; skipped ones (t.skip) are not in it.
      let failed = num('Total') - num('Passed');
      // A shard that crashed before reporting counts as a failure, never as a silent pass (one
      // killed after its summary has reported).
      const reported = /Duration:\s+[\d.]+ms/.test(plain);
      if ((code !== 0 || signal) && !reported && failed === 0) failed = 1;
      resolve({ runs, tally: { passed: num('Passed'), failed, skipped: num('Skipped') } });
    });
  });
}

async function runPass(label: string, env: NodeJS.ProcessEnv, files: string[]): Promise<Tally> {
  const shards = Math.min(jobs, files.length);
  console.log(`\n=== ${label}: ${files.length} files in ${shards} processes ===`);
  const started = performance.now();
  const timings = readTimings();
  // Longest first into the least loaded shard, so the shards end about together.
  const weight = (f: string) => timings[f] ?? fs.statSync(path.join(testDir, f)).size / 1000;
  const bins = Array.from({ length: shards }, () => ({ load: 0, files: [] as string[] }));
  for (const f of [...files].sort((a, b) => weight(b) - weight(a))) {
    const bin = bins.reduce((a, b) => (b.load < a.load ? b : a));
    bin.files.push(f);
    bin.load += weight(f);
  }
  const results = await Promise.all(bins.map((b) => runShard(b.files, env)));
  const runs = results.flatMap((r) => r.runs);
  writeTimings(runs, saveTimings && label === 'SQLite');
  const slowest = [...runs].sort((a, b) => b.ms - a.ms).slice(0, 8);
  const cpu = (r: FileRun) =>
    r.cpu === undefined ? '' : `${r.cpu.toFixed(1).padStart(6)} s CPU  `;
  console.log(`\n${label}: slowest files`);
  for (const r of slowest)
    console.log(`  ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${cpu(r)}${r.name}`);
  // On a loaded machine the wall times rank what waited longest; the CPU ranks what costs.
  if (runs.some((r) => r.cpu !== undefined)) {
    const costly = [...runs].sort((a, b) => (b.cpu ?? 0) - (a.cpu ?? 0)).slice(0, 8);
    const sumCpu = runs.reduce((a, r) => a + (r.cpu ?? 0), 0);
    console.log(`${label}: most CPU (${sumCpu.toFixed(0)} s over all files)`);
    for (const r of costly)
      console.log(`  ${cpu(r)}${(r.ms / 1000).toFixed(1).padStart(6)} s  ${r.name}`);
  }
  const failedFiles = runs.filter((r) => r.failed > 0).map((r) => r.name);
  if (failedFiles.length) console.log(`${label}: failing files: ${failedFiles.join(', ')}`);
  const sum = total(results.map((r) => r.tally));
  const wall = ((performance.now() - started) / 1000).toFixed(0);
  console.log(`${label}: ${sum.passed} passed, ${sum.failed} failed in ${wall} s`);
  return sum;
}

function total(tallies: Tally[]): Tally {
  return tallies.reduce(
    (a, t) => ({
      passed: a.passed + t.passed,
      failed: a.failed + t.failed,
      skipped: a.skipped + t.skipped,
    }),
    { passed: 0, failed: 0, skipped: 0 },
  );
}

// Every node process of the run (shards, the servers and CLIs the suites start, npm and npx in the
// docs' blocks) keeps what it compiled in Node's compile cache: the suites start the same entry
// points hundreds of times, and a cached start takes about half the CPU (src/node-version.mjs).
process.env.NODE_COMPILE_CACHE ??= path.join(os.tmpdir(), 'node-compile-cache');
// Administrators' passwords are hashed at the least cost the server accepts (scrypt N = 2^10, not
// 2^15): the sign-in suites check hundreds of passwords, about 100 ms of CPU each at the default.
// What the default is, and that a hash keeps its own cost, test/unit/password-cost.test.ts shows.
process.env.PASSWORD_HASH_COST ??= '10';

async function runAll(files: string[]): Promise<Tally> {
  const { TEST_DATABASE_URL, ...sqliteEnv } = process.env;
  const tallies = [await runPass('SQLite', sqliteEnv, files)];
  const pgFiles = files.filter((f) => !engineIndependent(f));
  if (TEST_DATABASE_URL && pgFiles.length < files.length)
    console.log(
      `\n${files.length - pgFiles.length} files never open the database: SQLite pass only.`,
    );
  if (TEST_DATABASE_URL && pgFiles.length)
    tallies.push(await runPass('PostgreSQL', process.env, pgFiles));
  else console.log('\nTEST_DATABASE_URL is not set: the PostgreSQL pass was skipped.');
  const sum = total(tallies);
  console.log(
    `\n${sum.passed} passed, ${sum.failed} failed${sum.skipped ? `, ${sum.skipped} skipped` : ''}`,
  );
  return sum;
}

const args = process.argv.slice(2);
const watch = args.includes('--watch');
const saveTimings = args.includes('--save-timings');
const filter = args.find((a) => !a.startsWith('--'));
const files = testFiles(new RegExp(filter ?? '.', 'i'));
if (!files.length) {
  console.error(`No test file under test/ matches ${filter}.`);
  process.exit(1);
}

if (process.env.TEST_DATABASE_URL) {
  const problem = await postgresProblem(process.env.TEST_DATABASE_URL);
  if (problem) {
    console.error(problem);
    process.exit(1);
  }
}

if (!watch) {
  const sum = await runAll(files);
  process.exit(sum.failed ? 1 : 0);
}

// Watch mode: a change under src/, test/ or spec/ runs the chosen files again (one run at a time).
let running: Promise<unknown> = runAll(files);
let timer: NodeJS.Timeout | undefined;
for (const dir of ['src', 'test', 'spec']) {
  fs.watch(path.join(root, dir), { recursive: true }, () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      running = running.then(() => {
        console.log('\n=== change seen: running again ===');
        return runAll(files);
      });
    }, 300);
  });
}
console.log('Watching src/, test/ and spec/ (Ctrl-C ends).');
