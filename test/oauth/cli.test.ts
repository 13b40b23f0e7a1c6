// The CLI as a child process: `login` with a test-driven "browser" (SCHOOL_OPEN_BROWSER=0, the
// test signs in and approves with fetch + cookies), then `whoami` (with automatic refresh) and
// `logout` (revocation).
import { createHook } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Booted } from '../helpers/app.ts';
import { main } from '../../src/cli/school/main.ts';
import { Browser, bootOAuth, field, human, setupAdmin, signIn, type Admin } from './helpers.ts';
import { npmScriptArgs } from '../helpers/npm-scripts.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Ctx {
  b: Booted;
  admin: Admin;
  dir: string;
}

const t = suite<Ctx>('oauth cli');
t.before(async (ctx) => {
  ctx.b = await bootOAuth();
  ctx.admin = await setupAdmin(ctx.b);
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-cli-'));
});
t.after(async (ctx) => {
  await ctx.b.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

function cli(ctx: Ctx, args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [...npmScriptArgs('school'), ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      SCHOOL_CONFIG_DIR: ctx.dir,
      SCHOOL_OPEN_BROWSER: '0',
      SCHOOL_BASE_URL: ctx.b.url,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  const done = new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr })),
  );
  const line = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no ${pattern} in: ${stdout}${stderr}`)),
        20_000,
      );
      const check = () => {
        const m = pattern.exec(stdout);
        if (m) {
          clearTimeout(timer);
          resolve(m[0]);
        }
      };
      child.stdout!.on('data', check);
      check(); // it may have been printed already
      child.on('close', () => setTimeout(() => reject(new Error(`exited: ${stdout}${stderr}`)), 0));
    });
  return { done, line };
}

const file = (ctx: Ctx) => path.join(ctx.dir, 'credentials.json');
const stored = (ctx: Ctx) => JSON.parse(fs.readFileSync(file(ctx), 'utf8')).servers[ctx.b.url];

t(
  'login: loopback listener, sign-in + consent in the "browser", tokens stored 0600',
  async (ctx) => {
    const { b, admin } = ctx;
    const run = cli(ctx, ['login']);
    const url = new URL((await run.line(/http:\/\/\S+\/oauth\/authorize\?\S+/)).trim());
    assert.match(url.searchParams.get('redirect_uri')!, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    assert.is(url.searchParams.get('code_challenge_method'), 'S256');

    const browser = new Browser(b.url);
    const toSignIn = await browser.get(url.toString());
    const returnTo = new URL(toSignIn.location!, b.url).searchParams.get('return_to')!;
    const back = await signIn(b, browser, admin, returnTo);
    const consent = await browser.get(back);
    const approved = await browser.post(back, {
      csrf: field(consent.text, 'csrf'),
      decision: 'approve',
    });
    const callback = await fetch(approved.location!);
    assert.is(callback.status, 200);
    assert.match(await callback.text(), /close this window/);

    const result = await run.done;
    assert.is(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`Logged in to .* as administrator ${admin.adminId}\\.`));
    assert.is(fs.statSync(file(ctx)).mode & 0o777, 0o600);
    const tokens = stored(ctx);
    assert.type(tokens.access_token, 'string');
    assert.type(tokens.refresh_token, 'string');
  },
);

t('whoami calls /credentials/current in human mode', async (ctx) => {
  const noKey = await cli(ctx, ['whoami']).done;
  assert.is(noKey.code, 2);
  assert.match(noKey.stderr, /SCHOOL_API_KEY/);

  const res = await cli(ctx, ['whoami'], { SCHOOL_API_KEY: ctx.admin.credentialSecret }).done;
  assert.is(res.code, 0, res.stderr);
  assert.match(res.stdout, new RegExp(`Administrator: ${ctx.admin.adminId}\\n`));
  assert.match(res.stdout, new RegExp(`Credential:    ${ctx.admin.credentialId} `));
  const json = await cli(ctx, ['whoami', '--json', '--api-key', ctx.admin.credentialSecret]).done;
  assert.is(JSON.parse(json.stdout).human.admin_id, String(ctx.admin.adminId));
});

t('an expired access token is refreshed automatically (and the pair rotated)', async (ctx) => {
  const before = stored(ctx);
  const data = JSON.parse(fs.readFileSync(file(ctx), 'utf8'));
  data.servers[ctx.b.url].expires_at = new Date(Date.now() - 1000).toISOString();
  fs.writeFileSync(file(ctx), JSON.stringify(data));
  const res = await cli(ctx, ['whoami'], { SCHOOL_API_KEY: ctx.admin.credentialSecret }).done;
  assert.is(res.code, 0, res.stderr);
  const after = stored(ctx);
  assert.is.not(after.refresh_token, before.refresh_token);
  assert.is.not(after.access_token, before.access_token);
  assert.is(fs.statSync(file(ctx)).mode & 0o777, 0o600);
});

t('logout revokes the tokens and forgets them', async (ctx) => {
  const { access_token } = stored(ctx);
  const ok = await ctx.b.api(
    'GET',
    '/api/v3/credentials/current',
    human(ctx.admin.credentialSecret, access_token),
  );
  assert.is(ok.status, 200);
  const res = await cli(ctx, ['logout']).done;
  assert.is(res.code, 0, res.stderr);
  assert.match(res.stdout, /Logged out of .*; tokens revoked\./);
  assert.is(stored(ctx), undefined);
  const gone = await ctx.b.api(
    'GET',
    '/api/v3/credentials/current',
    human(ctx.admin.credentialSecret, access_token),
  );
  assert.is(gone.body.error.code, 'invalid_access_token');
  const whoami = await cli(ctx, ['whoami'], { SCHOOL_API_KEY: ctx.admin.credentialSecret }).done;
  assert.is(whoami.code, 1);
  assert.match(whoami.stderr, /not logged in/);
});

t('login over SSH: the callback address pasted into the terminal', async (ctx) => {
  const { b, admin } = ctx;
  const out: string[] = [];
  const stdin = new PassThrough();
  const printed = async (pattern: RegExp) => {
    for (let i = 0; i < 400 && !out.some((l) => pattern.test(l)); i++)
      await new Promise((r) => setTimeout(r, 50));
    return out.find((l) => pattern.test(l))!;
  };
  // The timers the login starts: none may outlive it (its 5-minute wait for the browser's
  // callback kept a pasted login's process, and this suite's, alive for 5 minutes).
  const timers: NodeJS.Timeout[] = [];
  const hook = createHook({
    init: (_id, type, _trigger, resource) => {
      if (type === 'Timeout') timers.push(resource as NodeJS.Timeout);
    },
  }).enable();
  const run = main(['login', '--paste', '--base-url', b.url], {
    out: (l) => out.push(l),
    err: (l) => out.push(l),
    env: { SCHOOL_CONFIG_DIR: ctx.dir, SCHOOL_OPEN_BROWSER: '0' },
    stdin,
  });
  const url = new URL((await printed(/\/oauth\/authorize\?/)).trim());
  assert.ok(await printed(/paste that whole address here/));
  const browser = new Browser(b.url);
  const toSignIn = await browser.get(url.toString());
  const returnTo = new URL(toSignIn.location!, b.url).searchParams.get('return_to')!;
  const back = await signIn(b, browser, admin, returnTo);
  const consent = await browser.get(back);
  const approved = await browser.post(back, {
    csrf: field(consent.text, 'csrf'),
    decision: 'approve',
  });
  // The browser on the other machine cannot open the address; the user copies it instead.
  stdin.write('not an address\n');
  assert.ok(await printed(/That is not an address/));
  stdin.write(approved.location!.replace(/state=[^&]+/, 'state=forged') + '\n');
  assert.ok(await printed(/not this login's callback address/));
  stdin.write(approved.location! + '\n');
  assert.is(await run, 0, out.join('\n'));
  assert.ok(
    out.some((l) => l === `Logged in to ${b.url} as administrator ${admin.adminId}.`),
    out.join('\n'),
  );
  assert.type(stored(ctx).access_token, 'string');
  assert.ok(stdin.destroyed, 'stdin is let go, so the process can exit');
  hook.disable();
  const waiting = timers.filter(
    (tm) =>
      (tm as unknown as { _idleTimeout: number })._idleTimeout >= 60_000 &&
      tm.hasRef() &&
      !(tm as unknown as { _destroyed: boolean })._destroyed,
  );
  assert.is(waiting.length, 0, 'a long timer of the login is still running');
});

t.run();
