// The mock's validation proxy: in front of the real server every answer passes through untouched
// and unflagged; in front of a server that breaks the contract, each broken answer gets an
// X-Contract-Violations header and a log line naming what is wrong, and so does a request that
// breaks it (forwarded all the same). Also as a process:
// `npm run mock -- --proxy URL`.
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSpec } from '../../src/app.ts';
import { MOCK_BASE } from '../../src/mock/server.ts';
import { createProxy } from '../../src/mock/proxy.ts';
import { boot, type Booted } from '../helpers/app.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const spec = loadSpec();
type Proxy = ReturnType<typeof createProxy>;

/** A server that answers what the contract forbids (and one thing it allows). */
function brokenServer(): http.Server {
  return http.createServer((req, res) => {
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req_broken' });
      res.end(JSON.stringify(body));
    };
    const path = req.url!.split('?')[0];
    if (path === '/api/v3/users/7') return json(200, { data: { object: 'user', id: 7 } });
    if (path === '/api/v3/tags') return json(418, { error: { code: 'teapot' } });
    if (path === '/api/v3/capabilities') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end('fine');
    }
    const error = { code: 'not_found', message: 'No.', request_id: 'req_broken', details: [] };
    json(404, { error });
  });
}

const t = suite<{
  b: Booted;
  broken: http.Server;
  brokenUrl: string;
  real: Proxy;
  bad: Proxy;
  lines: string[];
}>('mock server: the validation proxy');

t.before(async (ctx) => {
  ctx.b = await boot();
  ctx.broken = brokenServer();
  await new Promise<void>((resolve) => ctx.broken.listen(0, '127.0.0.1', resolve));
  ctx.brokenUrl = `http://127.0.0.1:${(ctx.broken.address() as any).port}`;
  ctx.lines = [];
  const log = (line: string) => void ctx.lines.push(line);
  ctx.real = createProxy(spec, ctx.b.url, { apiRoot: MOCK_BASE, log });
  ctx.bad = createProxy(spec, ctx.brokenUrl + '/api/v3', { apiRoot: MOCK_BASE, log });
});
t.before.each((ctx) => void (ctx.lines.length = 0));
t.after(async (ctx) => {
  await Promise.all([ctx.real.close(), ctx.bad.close(), ctx.b.close()]);
  await new Promise((resolve) => ctx.broken.close(resolve));
});

async function through(proxy: Proxy, p: string, init: RequestInit = {}) {
  const port = proxy.server.listening
    ? (proxy.server.address() as any).port
    : await proxy.listen(0);
  const res = await fetch(`http://127.0.0.1:${port}${p}`, init);
  const text = await res.text();
  const header = res.headers.get('x-contract-violations');
  return { res, text, violations: header === null ? null : (JSON.parse(header) as string[]) };
}

t('in front of the real server: answers pass through, nothing flagged', async (ctx) => {
  const auth = { authorization: `Bearer ${ctx.b.secret}` };
  const created = await through(ctx.real, '/api/v3/users', {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': 'proxy-1' },
    body: JSON.stringify({ name: 'Ana Souza', email: 'ana.proxy@example.com' }),
  });
  assert.is(created.res.status, 201);
  assert.is(JSON.parse(created.text).data.email, 'ana.proxy@example.com');
  assert.ok(created.res.headers.get('x-request-id'));
  const id = JSON.parse(created.text).data.id;
  const listed = await through(ctx.real, '/api/v3/users?limit=1', { headers: auth });
  assert.equal(
    JSON.parse(listed.text).data.map((u: any) => u.id),
    [id],
  );
  const answers = [
    created,
    listed,
    await through(ctx.real, `/api/v3/users/${id}`, { headers: auth }),
    await through(ctx.real, '/api/v3/users/2147483647', { headers: auth }),
    await through(ctx.real, '/api/v3/users', { headers: { authorization: 'Bearer nope' } }),
    await through(ctx.real, '/api/v3/no-such-thing', { headers: auth }),
    await through(ctx.real, '/healthz'),
    await through(ctx.real, '/api/v3/users', { method: 'HEAD', headers: auth }),
  ];
  assert.equal(
    answers.map((a) => [a.res.status, a.violations]),
    [
      [201, null],
      [200, null],
      [200, null],
      [404, null],
      [401, null],
      [404, null],
      [200, null],
      [405, null],
    ],
  );
  assert.equal(ctx.lines, []);
});

t('a broken answer is flagged: header and log line', async (ctx) => {
  const user = await through(ctx.bad, '/api/v3/users/7');
  assert.is(user.res.status, 200);
  assert.is(user.text, '{"data":{"object":"user","id":7}}', 'passed back unchanged');
  assert.ok(user.violations!.includes('body/data/id must be string'), user.violations!.join('\n'));
  assert.ok(user.violations!.includes("body/data must have required property 'email'"));
  const teapot = await through(ctx.bad, '/api/v3/tags');
  assert.is(teapot.res.status, 418);
  assert.is(
    teapot.violations![0],
    'status 418 is not declared by listTags (200, 400, 401, 403, 406, 413, 415, 422, 429, 503, default)',
  );
  assert.ok(teapot.violations!.includes("body/error must have required property 'message'"));
  const text = await through(ctx.bad, '/api/v3/capabilities');
  assert.equal(text.violations, ['content-type text/plain is not declared (application/json)']);
  const fine = await through(ctx.bad, '/api/v3/users/8');
  assert.is(fine.violations, null);

  const logged = ctx.lines.map((l) => JSON.parse(l).contract_violation);
  assert.equal(
    logged.map((l) => [l.method, l.path, l.status, l.request_id]),
    [
      ['GET', '/api/v3/users/7', 200, 'req_broken'],
      ['GET', '/api/v3/tags', 418, 'req_broken'],
      ['GET', '/api/v3/capabilities', 200, null],
    ],
  );
  assert.equal(logged[0].violations, user.violations);
});

t(
  'a request that breaks the contract is flagged the same way, and still forwarded',
  async (ctx) => {
    const auth = { authorization: `Bearer ${ctx.b.secret}` };
    const json = { ...auth, 'content-type': 'application/json' };
    const unknownField = await through(ctx.real, '/api/v3/users', {
      method: 'POST',
      headers: { ...json, 'idempotency-key': 'proxy-bad-1' },
      body: JSON.stringify({ name: 'Bia', email: 'bia@example.com', nickname: 'b' }),
    });
    const noKey = await through(ctx.real, '/api/v3/users', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ name: 'Bia', email: 'bia@example.com' }),
    });
    const tooMany = await through(ctx.real, '/api/v3/users?limit=1000', { headers: auth });
    const plain = await through(ctx.real, '/api/v3/tags', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'text/plain', 'idempotency-key': 'proxy-bad-2' },
      body: 'vip',
    });
    // The server's answers (its own errors, on contract) come back as they were; only the request
    // is reported.
    assert.equal(
      [unknownField, noKey, tooMany, plain].map((a) => [
        a.res.status,
        JSON.parse(a.text).error.code,
        a.violations,
      ]),
      [
        [422, 'unknown_field', ['request body must NOT have additional properties (nickname)']],
        [
          422,
          'idempotency_key_required',
          ["request header must have required property 'idempotency-key'"],
        ],
        [422, 'validation_failed', ['request query/limit must be <= 200']],
        [
          415,
          'unsupported_media_type',
          ['request content-type text/plain is not declared (application/json)'],
        ],
      ],
    );
    const logged = ctx.lines.map((l) => JSON.parse(l).contract_violation);
    assert.equal(
      logged.map((l) => [l.method, l.path, l.status, l.violations]),
      [
        ['POST', '/api/v3/users', 422, unknownField.violations],
        ['POST', '/api/v3/users', 422, noKey.violations],
        ['GET', '/api/v3/users', 422, tooMany.violations],
        ['POST', '/api/v3/tags', 415, plain.violations],
      ],
    );
    assert.is(logged[0].request_id, unknownField.res.headers.get('x-request-id'));

    // A bad request to a server that also answers badly: both, the request's first.
    const both = await through(ctx.bad, '/api/v3/users/7?expand=everything');
    assert.is(both.violations![0], 'request query must NOT have additional properties (expand)');
    assert.ok(
      both.violations!.includes('body/data/id must be string'),
      both.violations!.join('\n'),
    );
  },
);

t('npm run mock -- --proxy URL: the same as a process', async (ctx) => {
  const proc = spawn(
    process.execPath,
    ['scripts/mock.ts', '--proxy', ctx.brokenUrl, '--port', '0'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  try {
    const lines = readline.createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
    const started = JSON.parse((await lines.next()).value);
    assert.is(started.proxy, ctx.brokenUrl);
    assert.match(started.url, /^http:\/\/127\.0\.0\.1:\d+\/api\/v3$/);
    const res = await fetch(started.url + '/users/7');
    assert.is(res.status, 200);
    assert.ok(res.headers.get('x-contract-violations')!.includes('body/data/id must be string'));
    const line = JSON.parse((await lines.next()).value);
    assert.equal(
      [line.contract_violation.path, line.contract_violation.status],
      ['/api/v3/users/7', 200],
    );
  } finally {
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGTERM');
    assert.is(await exited, 0);
  }
});

t.run();
