// engine: any
// Start-up failures explain themselves: each is one line on stderr naming what to change, exit 2
// for configuration (a variable, the secrets key), 1 for the world (a port in use, the database
// away, another server on the same SQLite file), never a stack trace. Child processes, as operators
// run them. The SECRETS_KEY checks run on SQLite and on PostgreSQL (a database of their own).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { TestDatabase } from '../helpers/app.ts';
import { processDatabase } from '../cli/database.ts';
import { startProcess, type Proc } from './processes.ts';
import { npmScriptArgs } from '../helpers/npm-scripts.ts';
import { createDb } from '../../src/db/knex.ts';
import { closeSideConnections } from '../../src/db/reader.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

/** `npm <script>` (start, worker, admin, mock) as package.json has it, on `node`. */
function run(
  script: string,
  env: NodeJS.ProcessEnv,
  args: string[] = [],
  node = process.execPath,
): Promise<Exit> {
  return new Promise((resolve) => {
    execFile(
      node,
      [...npmScriptArgs(script), ...args],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'info', ...env }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** One line, no stack frames. */
function oneLine(r: Exit, exit: number, pattern: RegExp) {
  assert.is(r.code, exit, r.stdout + r.stderr);
  const lines = r.stderr.trim().split('\n');
  assert.is(lines.length, 1, r.stderr);
  assert.match(lines[0]!, pattern);
  assert.not.match(r.stderr, /\n\s+at /);
}

function busyPort(): Promise<net.Server> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
}

interface Ctx {
  dir: string;
  procs: Proc[];
  databases: TestDatabase[];
}

const t = suite<Ctx>('start-up failures');
t.before((ctx) => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-startup-'));
  ctx.procs = [];
  ctx.databases = [];
});
t.after(async (ctx) => {
  for (const p of ctx.procs) if (p.proc.exitCode === null) p.proc.kill('SIGKILL');
  for (const d of ctx.databases) await d.drop();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

const sqlite = (ctx: Ctx, name: string) => `sqlite:${path.join(ctx.dir, name)}`;

t('a variable that cannot work: exit 2, one line naming it', async (ctx) => {
  const base = { DATABASE_URL: sqlite(ctx, 'config.db'), PORT: '0' };
  const cases: [NodeJS.ProcessEnv, RegExp][] = [
    [{ LOG_LEVEL: 'loud' }, /^npm start: LOG_LEVEL: 'loud' is not one of fatal, error, warn/],
    [{ WORKERS: 'nope' }, /^npm start: WORKERS: 'nope' is not one of true\/false/],
    [{ PORT: 'eighty' }, /^npm start: PORT: 'eighty' is not a whole number/],
    [{ DATABASE_POOL_MAX: 'ten' }, /^npm start: DATABASE_POOL_MAX: 'ten' is not a whole number/],
    [{ DATABASE_POOL_MAX: '0' }, /^npm start: DATABASE_POOL_MAX: '0' is not between 1 and 1000$/],
    [
      { DATABASE_URL: 'mysql://root:pw@db/school' },
      /^npm start: DATABASE_URL: unsupported 'mysql:\/\/root:\*\*\*@db\/school': use sqlite:/,
    ],
  ];
  // Side by side: each is a process of its own (one at a time, they were most of this file's time).
  const [worker, ...starts] = await Promise.all([
    // The worker reads the same configuration the same way.
    run('worker', { ...base, WORKERS: 'maybe' }),
    ...cases.map(([env]) => run('start', { ...base, ...env })),
  ]);
  cases.forEach(([, pattern], i) => oneLine(starts[i]!, 2, pattern));
  oneLine(worker!, 2, /^npm run worker: WORKERS: 'maybe'/);
});

t('the port in use: exit 1, one line (server and mock)', async (ctx) => {
  const busy = await busyPort();
  const { port } = busy.address() as net.AddressInfo;
  try {
    const env = { DATABASE_URL: sqlite(ctx, 'port.db'), PORT: String(port), WORKERS: 'false' };
    const [start, mock] = await Promise.all([
      run('start', env),
      run('mock', {}, ['--port', String(port)]),
    ]);
    oneLine(
      start,
      1,
      new RegExp(
        `^npm start: port ${port} on 127\\.0\\.0\\.1 is already in use: stop the other process or set PORT`,
      ),
    );
    oneLine(mock, 1, new RegExp(`^mock: port ${port} on 127\\.0\\.0\\.1 is already in use`));
  } finally {
    busy.close();
  }
});

t('the database away: exit 1, one line, the password never shown', async () => {
  const r = await run('start', {
    DATABASE_URL: 'postgres://school:hunter2@127.0.0.1:1/school',
    PORT: '0',
  });
  oneLine(
    r,
    1,
    /^npm start: cannot reach the database at postgres:\/\/school:\*\*\*@127\.0\.0\.1:1\/school \(ECONNREFUSED\): is PostgreSQL running\? Check DATABASE_URL$/,
  );
  assert.not.match(r.stderr, /hunter2/);
});

t(
  'SQLite: a second server on one file is refused; a worker beside it is not; stale locks are taken over',
  async (ctx) => {
    const url = sqlite(ctx, 'one.db');
    const env = { DATABASE_URL: url, PORT: '0', WORKERS: 'false', LOG_LEVEL: 'info' };
    const first = startProcess('src/main.ts', env);
    ctx.procs.push(first);
    await first.waitFor((j) => j.msg === 'School Platform API listening');
    // A separate worker beside the server is supported (spec/DECISIONS.md); a second one is not.
    // The refused server and the worker start side by side.
    const worker = startProcess('src/worker.ts', env);
    ctx.procs.push(worker);
    const [second] = await Promise.all([
      run('start', env),
      worker.waitFor((j) => j.msg === 'worker running'),
    ]);
    oneLine(
      second,
      1,
      new RegExp(
        `^npm start: another npm start \\(pid ${first.proc.pid}\\) already uses .*one\\.db: SQLite is one server per database file`,
      ),
    );
    oneLine(await run('worker', env), 1, /^npm run worker: another npm run worker \(pid \d+\)/);
    const [workerExit, firstExit] = await Promise.all([worker.stop(), first.stop()]);
    assert.is(workerExit, 0, 'worker: ' + worker.stderr);
    assert.is(firstExit, 0, 'first: ' + first.stderr);
    // Stopped cleanly: the lock is gone. A lock left by a dead process (kill -9) is taken over.
    const file = url.slice('sqlite:'.length);
    assert.is(fs.existsSync(`${file}.server.lock`), false);
    fs.writeFileSync(`${file}.server.lock`, '999999999');
    const again = startProcess('src/main.ts', env);
    ctx.procs.push(again);
    await again.waitFor((j) => j.msg === 'School Platform API listening');
    assert.is(fs.readFileSync(`${file}.server.lock`, 'utf8'), String(again.proc.pid));
    assert.is(await again.stop(), 0, 'again: ' + again.proc.signalCode + ' ' + again.stderr);
  },
);

t('a Node older than 22.18 is told so before anything native loads', async (ctx) => {
  // The machine's own node, when it is older (Node 20 here): better-sqlite3 13 would segfault.
  const old = '/usr/bin/node';
  const version = fs.existsSync(old)
    ? await new Promise<string>((r) => execFile(old, ['-v'], (_e, out) => r(out.trim())))
    : '';
  const major = Number(version.slice(1).split('.')[0]);
  if (!version || major >= 22) {
    console.log(`  (no Node older than 22 at ${old}: checked only on machines that have one)`);
    return;
  }
  const r = await run('start', { DATABASE_URL: sqlite(ctx, 'old.db'), PORT: '0' }, [], old);
  oneLine(
    r,
    2,
    new RegExp(
      `^This server needs Node\\.js 22\\.18 or later \\(24 recommended\\); this is ${version.replace(/\./g, '\\.')}`,
    ),
  );
});

t(
  'a SECRETS_KEY that is not the database key: the CLI and the server refuse, nothing sealed',
  async (ctx) => {
    const database = await processDatabase();
    ctx.databases.push(database);
    await database.db.destroy();
    const keyA = 'secrets-key-A-' + 'a'.repeat(32);
    const keyB = 'secrets-key-B-' + 'b'.repeat(32);
    const env = {
      DATABASE_URL: database.url,
      PORT: '0',
      WORKERS: 'false',
      FILES_DIR: path.join(ctx.dir, 'files'),
    };
    const server = startProcess('src/main.ts', { ...env, SECRETS_KEY: keyA });
    ctx.procs.push(server);
    await server.waitFor((j) => j.msg === 'School Platform API listening');

    // The operator forgot SECRETS_KEY on the CLI: the key file of another data folder is used.
    // Beside it, the same command with the right key (the refused one writes nothing to race).
    const [cli, ok] = await Promise.all([
      run('admin', { ...env, SECRETS_KEY: keyB }, ['signing-key', 'rotate']),
      run('admin', { ...env, SECRETS_KEY: keyA }, ['signing-key', 'rotate']),
    ]);
    assert.is(cli.code, 2, cli.stderr);
    assert.is(cli.stdout, '');
    const error = JSON.parse(cli.stderr.trim().split('\n').pop()!).error;
    assert.is(error.code, 'secrets_key_mismatch');
    assert.match(
      error.message,
      /^SECRETS_KEY does not match the key this database's secrets are sealed with \(fingerprint [0-9a-f]{12}, this process has [0-9a-f]{12}\)\. Set SECRETS_KEY/,
    );

    // The same key works: the server is unharmed and the CLI rotates.
    assert.is(ok.code, 0, ok.stderr);
    assert.is(await server.stop(), 0, 'server: ' + server.proc.signalCode + ' ' + server.stderr);

    // A second instance with the wrong key stops at start; with the right one it starts.
    oneLine(
      await run('start', { ...env, SECRETS_KEY: keyB }),
      2,
      /^npm start: SECRETS_KEY does not match the key this database's secrets are sealed with/,
    );
    const right = startProcess('src/main.ts', { ...env, SECRETS_KEY: keyA });
    ctx.procs.push(right);
    await right.waitFor((j) => j.msg === 'School Platform API listening');
    assert.is(await right.stop(), 0);

    // A database from before fingerprints: the wrong key is found out by the secret sealed there,
    // so it never becomes the recorded one.
    const db = createDb(database.url);
    await db('server_keys').where('name', 'secrets_key_fingerprint').delete();
    await db.destroy();
    await closeSideConnections(db);
    oneLine(
      await run('start', { ...env, SECRETS_KEY: keyB }),
      2,
      /it does not open the secrets already sealed there/,
    );
    const upgraded = startProcess('src/main.ts', { ...env, SECRETS_KEY: keyA });
    ctx.procs.push(upgraded);
    await upgraded.waitFor((j) => j.msg === 'School Platform API listening');
    assert.is(await upgraded.stop(), 0);
  },
);

t.run();
