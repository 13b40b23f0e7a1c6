// The admin CLI end to end against a fresh database, then the app booted on that same database
// proves each command's effect over HTTP. Most commands run in this process through runAdmin (the
// CLI's whole logic, with its stdout, stderr and exit code captured); the tests marked "process"
// run the real entry point (`npm run admin` as package.json has it), whose only extra is where output goes.
// A process costs two seconds of CPU to start: 40 of them made this the slowest suite.
// On PostgreSQL the CLI cannot pick a schema, so the suite gets a database of its own.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, type Booted, type TestDatabase } from '../helpers/app.ts';
import { processDatabase } from './database.ts';
import { loadConfig } from '../../src/config.ts';
import { TOTP_CONTEXT } from '../../src/domain/accounts/service.ts';
import { loadSecretsKey, unseal } from '../../src/secrets-key.ts';
import { runAdmin } from '../../src/cli/admin.ts';
import { npmScriptArgs } from '../helpers/npm-scripts.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

function parseRun(code: number, stdout: string, stderr: string): Run {
  let json: any;
  try {
    // Libraries may print warnings on stderr first: the CLI's error is the JSON line.
    const errLine = stderr.split('\n').find((l) => l.startsWith('{'));
    json = JSON.parse(code === 0 ? stdout : errLine!);
  } catch {
    json = undefined;
  }
  return { code, stdout, stderr, json };
}

/** Runs the CLI in this process: the same code as the entry point, output captured. */
async function admin(databaseUrl: string, args: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runAdmin(args, {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
  });
  return parseRun(code, stdout, stderr);
}

/** Runs the CLI as a process; `json` is stdout's object on success, else the error line from stderr. */
function adminProcess(databaseUrl: string, args: string[]): Promise<Run> {
  const env = { ...process.env, DATABASE_URL: databaseUrl };
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...npmScriptArgs('admin'), ...args], // npm run admin, minus npm's start-up
      { cwd: ROOT, env },
      (err, stdout, stderr) =>
        resolve(parseRun(err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr)),
    );
  });
}

type Cli = (...args: string[]) => Promise<Run>;
const t = suite<{ database: TestDatabase; b: Booted; cli: Cli; process: Cli }>('admin cli');

t.before(async (ctx) => {
  ctx.database = await processDatabase();
  ctx.cli = (...args) => admin(ctx.database.url, args);
  ctx.process = (...args) => adminProcess(ctx.database.url, args);
});

t.after(async (ctx) => {
  await ctx.b?.close();
  if (!ctx.b) await ctx.database.db.destroy();
  await ctx.database.drop();
});

/** Exit 0 and exactly one JSON object on stdout. */
function ok(run: Run): any {
  assert.is(run.code, 0, run.stderr);
  assert.is(run.stdout.trim().split('\n').length, 1);
  assert.type(run.json, 'object');
  return run.json;
}

function failed(run: Run, exit: number, code: string) {
  assert.is(run.code, exit, run.stdout + run.stderr);
  assert.is(run.stdout, '');
  assert.is(run.json?.error?.code, code, run.stderr);
  assert.type(run.json.error.message, 'string');
}

const state: Record<string, string> = {};

t('account create on an empty database (the CLI migrates it) prints a string id', async (ctx) => {
  // process: the real entry point, stdout holding exactly the JSON object.
  const out = ok(await ctx.process('account', 'create', '--name', 'CLI school'));
  assert.equal(Object.keys(out), ['id']);
  assert.match(out.id, /^[1-9][0-9]*$/);
  state.account = out.id;
  // The app on the same database sees what the CLI wrote.
  ctx.b = await boot({ database: ctx.database });
});

t('credential create: the printed secret authenticates with its permissions', async (ctx) => {
  const out = ok(
    await ctx.cli(
      'credential',
      'create',
      '--account',
      state.account!,
      '--permissions',
      'users.read,tags.update',
      '--auth-mode',
      'both',
      '--name',
      'CRM sync',
    ),
  );
  assert.equal(Object.keys(out).sort(), ['id', 'secret']);
  assert.match(out.secret, /^sch_live_[0-9A-Za-z]{43}$/);
  const res = await ctx.b.api('GET', '/api/v3/credentials/current', { secret: out.secret });
  assert.is(res.status, 200);
  assert.is(res.body.data.id, out.id);
  assert.is(res.body.data.name, 'CRM sync');
  assert.is(res.body.data.auth_mode, 'both');
  assert.equal(res.body.data.permissions, ['users.read', 'tags.update']);
  assert.is(res.body.data.issuer_id, null);
});

t("--test makes a sch_test_ secret; permissions default to '*'", async (ctx) => {
  const out = ok(await ctx.cli('credential', 'create', '--account', state.account!, '--test'));
  assert.match(out.secret, /^sch_test_/);
  const res = await ctx.b.api('GET', '/api/v3/credentials/current', { secret: out.secret });
  assert.is(res.status, 200);
  assert.is(res.body.data.environment, 'test');
  assert.equal(res.body.data.permissions, ['*']);
  assert.is(res.body.data.auth_mode, 'autonomous');
  state.credential = out.id;
  state.secret = out.secret;
});

t('credential suspend / expire / revoke end authentication with their own codes', async (ctx) => {
  // One after another: in one process, SQLite connections waiting on each other's lock would
  // block the thread that holds it.
  const creds: Run[] = [];
  for (let i = 0; i < 3; i++)
    creds.push(
      await ctx.cli('credential', 'create', '--account', state.account!, '--permissions', '*'),
    );
  const cases = [
    ['suspend', 'suspended', 'credential_suspended'],
    ['expire', 'expired', 'credential_expired'],
    ['revoke', 'revoked', 'credential_revoked'],
  ] as const;
  for (const [i, [verb, status, code]] of cases.entries()) {
    const { id, secret } = ok(creds[i]!);
    // Twice: the first use writes last_used_at, so the second reads a row this process keeps
    // until something says it changed; here only another process's commit can.
    for (let n = 0; n < 2; n++) {
      const before = await ctx.b.api('GET', '/api/v3/credentials/current', { secret });
      assert.is(before.status, 200);
    }
    const out = ok(await ctx.cli('credential', verb, '--id', id));
    assert.equal(out, { id, status });
    const after = await ctx.b.api('GET', '/api/v3/credentials/current', { secret });
    assert.is(after.status, 401, verb);
    assert.is(after.body.error.code, code);
  }
  failed(await ctx.cli('credential', 'revoke', '--id', '999999'), 1, 'not_found');
});

t('account status blocked / unavailable / active', async (ctx) => {
  const get = () => ctx.b.api('GET', '/api/v3/credentials/current', { secret: state.secret! });
  for (const [status, code] of [
    ['blocked', 'instance_blocked'],
    ['unavailable', 'instance_unavailable'],
  ]) {
    const out = ok(await ctx.cli('account', 'status', '--id', state.account!, '--status', status!));
    assert.equal(out, { id: state.account, status });
    const res = await get();
    assert.is(res.status, 403);
    assert.is(res.body.error.code, code);
  }
  ok(await ctx.cli('account', 'status', '--id', state.account!, '--status', 'active'));
  assert.is((await get()).status, 200);
});

t(
  'account features --imports off|on: POST /imports answers 409 feature_disabled while off',
  async (ctx) => {
    const body = { file_id: '1', type: 'students_access' };
    const post = () =>
      ctx.b.api('POST', '/api/v3/imports', {
        body,
        secret: state.secret!,
        key: `f-${Math.random()}`,
      });
    const off = ok(
      await ctx.cli('account', 'features', '--id', state.account!, '--imports', 'off'),
    );
    assert.equal(off, { id: state.account, features: { imports: false } });
    const refused = await post();
    assert.is(refused.status, 409);
    assert.is(refused.body.error.code, 'feature_disabled');
    const on = ok(await ctx.cli('account', 'features', '--id', state.account!, '--imports', 'on'));
    assert.equal(on, { id: state.account, features: { imports: true } });
    // On again: the request gets past the switch (no such file: 422 on file_id).
    const allowed = await post();
    assert.is(allowed.status, 422);
    assert.is(allowed.body.error.details[0].field, 'file_id');
    const bad = await ctx.cli('account', 'features', '--id', state.account!, '--imports', 'maybe');
    assert.is.not(bad.code, 0);
  },
);

t('account create --sandbox --replica-of', async (ctx) => {
  const out = ok(
    await ctx.cli(
      'account',
      'create',
      '--name',
      'Sandbox',
      '--sandbox',
      '--replica-of',
      state.account!,
    ),
  );
  const row = await ctx.b.app.db('accounts').where('id', Number(out.id)).first();
  assert.ok(Boolean(row.sandbox));
  assert.is(Number(row.replica_of), Number(state.account));
  failed(
    await ctx.cli('account', 'create', '--name', 'X', '--replica-of', '999999'),
    1,
    'not_found',
  );
});

t('legacy-key create: the key works on /api/v1 and not on /api/v3', async (ctx) => {
  const out = ok(await ctx.cli('legacy-key', 'create', '--account', state.account!));
  assert.equal(Object.keys(out), ['key']);
  const v1 = await ctx.b.api('GET', '/api/v1/usuario', {
    secret: null,
    headers: { authorization: out.key },
  });
  assert.is(v1.status, 200, 'the legacy key authenticates on v1');
  assert.is(v1.body.success, true);
  assert.equal(v1.body.data.usuario, []);
  const v3 = await ctx.b.api('GET', '/api/v3/credentials/current', { secret: out.key });
  assert.is(v3.status, 401);
});

t('admin create / link / unlink / remove', async (ctx) => {
  const created = ok(
    await ctx.cli(
      'admin',
      'create',
      '--account',
      state.account!,
      '--email',
      'Ops@CLI.school',
      '--password',
      'correct horse',
    ),
  );
  assert.equal(Object.keys(created).sort(), ['id', 'totp_secret']);
  assert.match(created.totp_secret, /^[A-Z2-7]{32}$/);
  const admin = created.id;
  const row = await ctx.b.app.db('administrators').where('id', Number(admin)).first();
  assert.is(row.email_lower, 'ops@cli.school');
  // Sealed with the key the server uses: the CLI and the server share it.
  assert.not.ok(row.totp_secret.includes(created.totp_secret));
  const key = loadSecretsKey(loadConfig({ DATABASE_URL: ctx.database.url }));
  assert.is(unseal(key, row.totp_secret, TOTP_CONTEXT), created.totp_secret);
  assert.not.match(row.password_hash, /correct horse/);

  failed(
    await ctx.cli(
      'admin',
      'create',
      '--account',
      state.account!,
      '--email',
      'ops@cli.school',
      '--password',
      'another one',
    ),
    1,
    'already_exists',
  );

  const links = () => ctx.b.app.db('credential_administrators').where('admin_id', Number(admin));
  const link = ok(
    await ctx.cli('admin', 'link', '--admin', admin, '--credential', state.credential!),
  );
  assert.equal(link, { admin_id: admin, credential_id: state.credential });
  assert.is((await links()).length, 1);
  // Another account's credential: refused.
  failed(
    await ctx.cli('admin', 'link', '--admin', admin, '--credential', String(ctx.b.credentialId)),
    1,
    'tenant_mismatch',
  );
  ok(await ctx.cli('admin', 'unlink', '--admin', admin, '--credential', state.credential!));
  assert.is((await links()).length, 0);
  failed(
    await ctx.cli('admin', 'unlink', '--admin', admin, '--credential', state.credential!),
    1,
    'not_found',
  );

  ok(await ctx.cli('admin', 'link', '--admin', admin, '--credential', state.credential!));
  const removed = ok(await ctx.cli('admin', 'remove', '--id', admin));
  assert.equal(removed, { id: admin, status: 'removed' });
  assert.is((await links()).length, 0);
  failed(await ctx.cli('admin', 'remove', '--id', '999999'), 1, 'not_found');
});

t('usage errors exit 2 with the usage text; nothing reaches the database', async (ctx) => {
  const cases = [
    [],
    ['frobnicate'],
    ['account', 'explode'],
    ['account', 'create'],
    ['account', 'create', '--name'],
    ['account', 'create', '--name', 'X', '--bogus'],
    ['account', 'create', '--name', 'X', '--name', 'Y'],
    ['account', 'create', '--name', 'X', 'extra'],
    ['account', 'status', '--id', '1', '--status', 'asleep'],
    ['credential', 'create', '--account', 'abc'],
    ['credential', 'create', '--account', '1', '--permissions', 'users'],
    ['credential', 'create', '--account', '1', '--permissions', 'users.read,Users.Write'],
    ['credential', 'create', '--account', '1', '--permissions', '*,users.read'],
    ['credential', 'create', '--account', '1', '--permissions', ''],
    ['credential', 'create', '--account', '1', '--auth-mode', 'human'],
    ['credential', 'suspend'],
    ['admin', 'create', '--account', '1', '--email', 'nope', '--password', 'long enough'],
    ['admin', 'create', '--account', '1', '--email', 'a@b.co', '--password', 'short'],
    ['credential', 'create', '--account', '1', '--permissions', 'users.read,users.reed'],
  ];
  const runs = await Promise.all(cases.map((args) => ctx.cli(...args)));
  for (const [i, run] of runs.entries()) {
    failed(run, 2, 'usage_error');
    assert.match(run.stderr, /Usage: npm run admin/, cases[i]!.join(' '));
  }
  assert.match(runs[10]!.json.error.message, /resource\.action/);
  assert.match(runs[14]!.json.error.message, /autonomous, both, human_required/);
  assert.is(
    runs[18]!.json.error.message,
    'Not a permission of the contract: users.reed. Did you mean users.read?',
  );
  const accounts = await ctx.b.app.db('accounts').count({ n: '*' });
  assert.is(Number(accounts[0]!.n), 3, 'the test account, CLI school and its sandbox only');
});

t('signing-key rotate: a new active key, the old one retired (it still verifies)', async (ctx) => {
  const before = (await ctx.b.app
    .db('oauth_signing_keys')
    .whereNull('retired_at')
    .pluck('kid')) as string[];
  assert.is(before.length, 1, 'the server made one on start');
  const out = ok(await ctx.cli('signing-key', 'rotate'));
  assert.equal(Object.keys(out).sort(), ['kid', 'retired']);
  assert.is(out.retired, before[0]);
  const rows = await ctx.b.app.db('oauth_signing_keys').select('kid', 'retired_at');
  const active = rows.filter((r: any) => r.retired_at === null).map((r: any) => r.kid);
  assert.equal(active, [out.kid]);
  assert.ok(rows.some((r: any) => r.kid === before[0] && r.retired_at !== null));
});

t('--help prints the usage on stdout and exits 0', async (ctx) => {
  const all = await ctx.process('--help'); // process
  assert.is(all.code, 0);
  assert.match(all.stdout, /legacy-key create --account ID/);
  assert.match(all.stdout, /signing-key rotate/);
  const one = await ctx.cli('credential', 'create', '--help');
  assert.is(one.code, 0);
  assert.match(one.stdout, /--auth-mode autonomous\|both\|human_required/);
  assert.not.match(one.stdout, /legacy-key/);
});

t('an unsupported DATABASE_URL exits 2 with invalid_config naming the variable', async () => {
  const r = await adminProcess('mysql://localhost/school', ['account', 'create', '--name', 'X']);
  failed(r, 2, 'invalid_config');
  assert.match(r.stderr, /DATABASE_URL: unsupported 'mysql:\/\/localhost\/school'/);
});

t('an unreachable database exits 1 with database_unavailable, in one sentence', async () => {
  // Port 1 on loopback: nothing listens there, the connection is refused at once.
  const r = await admin('postgres://school:secret@127.0.0.1:1/school', [
    'account',
    'create',
    '--name',
    'X',
  ]);
  failed(r, 1, 'database_unavailable');
  assert.match(
    r.stderr,
    /cannot reach the database at postgres:\/\/school:\*\*\*@127\.0\.0\.1:1\/school \(ECONNREFUSED\)/,
  );
  assert.not.match(r.stderr, /secret/);
});

t.run();
