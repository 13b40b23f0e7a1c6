// `npm start` as operators run it: a real process on an empty database prints the demo secrets
// once (never through the logger), a restart prints none, and SIGTERM drains in-flight requests
// before exiting 0. Runs on SQLite, and on PostgreSQL in a database of its own.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { TestDatabase } from '../helpers/app.ts';
import { processDatabase } from '../cli/database.ts';
import { startProcess, type Proc } from './processes.ts';

interface Server extends Proc {
  port: number;
  url: string;
}

async function start(database: TestDatabase, filesDir: string): Promise<Server> {
  const proc = startProcess('src/main.ts', {
    DATABASE_URL: database.url,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    WORKERS: '0',
    FILES_DIR: filesDir,
  });
  const listening = await proc.waitFor((j) => j.msg === 'School Platform API listening', 30_000);
  return Object.assign(proc, {
    port: listening.port as number,
    url: `http://127.0.0.1:${listening.port}`,
  });
}

const stop = (server: Server) => server.stop();

const logLines = (s: Server) => s.lines.filter((l) => l.json && 'level' in l.json);
const demoOf = (s: Server) => s.lines.filter((l) => l.json?.v3_credential_secret !== undefined);

interface Ctx {
  database: TestDatabase;
  dir: string;
  servers: Server[];
  demo: any;
}

const t = suite<Ctx>('server start');

t.before(async (ctx) => {
  ctx.database = await processDatabase();
  // The server opens the database itself; this suite only needs the URL.
  await ctx.database.db.destroy();
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-start-'));
  ctx.servers = [];
});

t.after(async (ctx) => {
  for (const s of ctx.servers) if (s.proc.exitCode === null) s.proc.kill('SIGKILL');
  await ctx.database.drop();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

t('first start on an empty database prints the demo secrets once, never in logs', async (ctx) => {
  const s = await start(ctx.database, ctx.dir);
  ctx.servers.push(s);
  const printed = demoOf(s);
  assert.is(printed.length, 1);
  const demo = printed[0]!.json;
  ctx.demo = demo;
  assert.match(demo.v3_credential_secret, /^sch_live_[0-9A-Za-z]{43}$/);
  assert.type(demo.legacy_api_key, 'string');
  assert.is(demo.admin.email, 'admin@demo.school');
  assert.ok(demo.admin.password.length >= 12);
  assert.match(demo.admin.totp_secret, /^[A-Z2-7]{32}$/);
  // The log says a demo account was created, without any of its secrets.
  assert.ok(logLines(s).some((l) => /demo account/.test(l.json.msg)));

  const v3 = await fetch(s.url + '/api/v3/credentials/current', {
    headers: { authorization: `Bearer ${demo.v3_credential_secret}` },
  });
  assert.is(v3.status, 200);
  const credential = (await v3.json()).data;
  assert.equal(credential.permissions, ['*']);
  assert.is(credential.auth_mode, 'both');
  // PORT=0: the public URL names the port the server really listens on.
  const discovery = await fetch(s.url + '/.well-known/oauth-authorization-server');
  assert.is(discovery.status, 200);
  assert.is((await discovery.json()).issuer, s.url);

  const v1 = await fetch(s.url + '/api/v1/usuario', {
    headers: { authorization: demo.legacy_api_key },
  });
  assert.is(v1.status, 200, 'the legacy key authenticates on v1');
  assert.is((await v1.json()).success, true);

  assert.is(await stop(s), 0);
  const secrets = [
    demo.v3_credential_secret,
    demo.legacy_api_key,
    demo.admin.password,
    demo.admin.totp_secret,
  ];
  for (const line of logLines(s))
    for (const secret of secrets) assert.not.ok(line.raw.includes(secret), `logged: ${line.raw}`);
  for (const secret of secrets) assert.not.ok(s.stderr.includes(secret));
  assert.ok(logLines(s).some((l) => l.json.msg === 'stopped'));
});

t('a second start on the same database prints no secrets', async (ctx) => {
  const s = await start(ctx.database, ctx.dir);
  ctx.servers.push(s);
  assert.is(demoOf(s).length, 0);
  const out = s.lines.map((l) => l.raw).join('\n');
  assert.not.ok(out.includes(ctx.demo.v3_credential_secret));
  assert.not.ok(out.includes(ctx.demo.legacy_api_key));
  const v3 = await fetch(s.url + '/api/v3/credentials/current', {
    headers: { authorization: `Bearer ${ctx.demo.v3_credential_secret}` },
  });
  assert.is(v3.status, 200);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t('SIGTERM lets an in-flight request finish, then the process exits 0', async (ctx) => {
  const s = ctx.servers.at(-1)!;
  const body = Buffer.from(JSON.stringify({ name: 'Slow Student', email: 'slow@example.com' }));
  // A keep-alive client, as real ones are: the drained connection must not hold the exit.
  const agent = new http.Agent({ keepAlive: true });
  const req = http.request(s.url + '/api/v3/users', {
    method: 'POST',
    agent,
    headers: {
      authorization: `Bearer ${ctx.demo.v3_credential_secret}`,
      'content-type': 'application/json',
      'content-length': String(body.length),
      'idempotency-key': `slow-${Date.now()}`,
    },
  });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
  });
  const third = Math.ceil(body.length / 3);
  req.write(body.subarray(0, third));
  await sleep(100);
  s.proc.kill('SIGTERM');
  await s.waitFor((j) => /shutting down/.test(j.msg ?? ''), 5_000);
  await sleep(100);
  // Draining: no new connections are accepted meanwhile.
  const refused = await fetch(s.url + '/api/v3/capabilities').then(
    () => false,
    () => true,
  );
  assert.ok(refused, 'a new connection was accepted after SIGTERM');
  req.write(body.subarray(third, 2 * third));
  await sleep(100);
  req.end(body.subarray(2 * third));

  const res = await response;
  assert.is(res.status, 201, res.body);
  assert.is(JSON.parse(res.body).data.email, 'slow@example.com');
  const code = await Promise.race([s.exited, sleep(10_000).then(() => 'timeout')]);
  agent.destroy();
  assert.is(code, 0);
});

t.run();
