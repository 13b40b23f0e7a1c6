// Log lines as operators read them: every line about a request carries its request id (the
// X-Request-Id the client saw), an unexpected error is logged once with its stack, and no secret
// (credential, bearer token, legacy key) appears anywhere, whatever an error carries.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger } from '../../src/log.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';

interface Line {
  raw: string;
  json: any;
}

interface Ctx {
  b: Booted;
  lines: Line[];
}

const t = suite<Ctx>('logs');

t.before(async (ctx) => {
  ctx.lines = [];
  const logger = createLogger('debug', {
    write: (raw: string) => void ctx.lines.push({ raw, json: JSON.parse(raw) }),
  });
  ctx.b = await boot({ logger });
});

t.after(async (ctx) => {
  await ctx.b.close();
});

const ofRequest = (ctx: Ctx, id: string) => ctx.lines.filter((l) => l.json.request_id === id);

t('each request: one line with its request id, route, status and duration', async (ctx) => {
  const { b } = ctx;
  const res = await b.api('POST', '/api/v3/users', {
    key: newKey(),
    body: { name: 'Ana Souza', email: 'ana.logs@example.com' },
  });
  assert.is(res.status, 201);
  const id = res.headers.get('x-request-id')!;
  const lines = ofRequest(ctx, id);
  assert.is(lines.length, 1);
  assert.is(lines[0]!.json.msg, 'request');
  assert.is(lines[0]!.json.level, 30);
  assert.is(lines[0]!.json.method, 'POST');
  assert.is(lines[0]!.json.route, '/api/v3/users');
  assert.is(lines[0]!.json.status, 201);
  assert.type(lines[0]!.json.duration_ms, 'number');
  // A passing health probe is a debug line; a failing one is worth an info line.
  const probe = await fetch(b.url + '/healthz');
  const probeLines = ofRequest(ctx, probe.headers.get('x-request-id')!);
  assert.equal(
    probeLines.map((l) => [l.json.msg, l.json.level]),
    [['request', 20]],
  );
});

t('an unexpected error: logged once, with its stack, under the request id', async (ctx) => {
  const { b } = ctx;
  const users = b.app.services.users as any;
  const create = users.create;
  users.create = async () => {
    // What an HTTP client's error may carry: the request it made, headers and all.
    throw Object.assign(new Error('the directory service went away'), {
      headers: { authorization: `Bearer ${b.secret}`, 'x-api-key': b.secret },
      secret: b.secret,
    });
  };
  try {
    const res = await b.api('POST', '/api/v3/users', {
      key: newKey(),
      body: { name: 'Bia Lima', email: 'bia.logs@example.com' },
    });
    assert.is(res.status, 500);
    const id = res.headers.get('x-request-id')!;
    assert.is(res.body.error.request_id, id);
    const lines = ofRequest(ctx, id);
    const errors = lines.filter((l) => l.json.err);
    assert.is(errors.length, 1, 'logged once');
    assert.is(errors[0]!.json.level, 50);
    assert.is(errors[0]!.json.err.message, 'the directory service went away');
    assert.match(errors[0]!.json.err.stack, /Error: the directory service went away\n\s+at /);
    assert.is(errors[0]!.json.err.headers.authorization, '[Redacted]');
    assert.is(errors[0]!.json.err.secret, '[Redacted]');
    assert.equal(
      lines.map((l) => l.json.msg),
      ['unhandled error', 'request'],
    );
    assert.is(lines[1]!.json.status, 500);
  } finally {
    users.create = create;
  }
});

t('no line without a request id during requests, and no secret in any line', async (ctx) => {
  const { b } = ctx;
  const legacy = await b.app.services.accounts.createLegacyKey(b.accountId);
  ctx.lines.length = 0;
  await b.api('GET', '/api/v3/credentials/current');
  await b.api('GET', '/api/v3/credentials/current', { secret: 'sch_live_' + 'x'.repeat(43) });
  await fetch(b.url + '/api/v2/nothing-here', { headers: { authorization: legacy.key } });
  await fetch(b.url + '/oauth/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: 'rt_secret_value',
      client_id: 'service-cli',
    }),
  });
  assert.ok(ctx.lines.length >= 4);
  for (const line of ctx.lines) {
    assert.match(line.json.request_id ?? '', /^req_/, `a line without a request id: ${line.raw}`);
    for (const secret of [b.secret, legacy.key, 'rt_secret_value'])
      assert.not.ok(line.raw.includes(secret), `a secret in: ${line.raw}`);
  }
});

t.run();
