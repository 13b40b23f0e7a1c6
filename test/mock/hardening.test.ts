// engine: any
// The mock promises the real server's request checks: the same answers where the real server was
// hardened (undecodable path values, bodies sent to operations that take none, clients that hang
// up), never a 500 with a stack on the console.
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSpec } from '../../src/app.ts';
import { createMock } from '../../src/mock/server.ts';
import { ContractChecker } from '../helpers/contract.ts';
import { rawRequest } from '../helpers/raw.ts';

const SECRET = 'sch_test_mock';
const spec = loadSpec();
const checker = new ContractChecker(spec);

type Mock = Awaited<ReturnType<typeof createMock>>;
const t = suite<{ mock: Mock; url: string; printed: unknown[] }>('mock server: hardening');
t.before(async (ctx) => {
  ctx.mock = await createMock(spec);
  ctx.url = `http://127.0.0.1:${await ctx.mock.listen(0)}`;
});
t.before.each((ctx) => {
  ctx.printed = [];
  console.error = (...args: unknown[]) => void ctx.printed.push(args);
});
const { error } = console;
t.after.each(() => {
  console.error = error;
});
t.after(async ({ mock }) => mock.close());

const auth: [string, string] = ['Authorization', `Bearer ${SECRET}`];

t(
  '10: an undecodable path value is 404, an undecodable route 404 too, as on the server',
  async (ctx) => {
    for (const path of ['/api/v3/users/%ff', '/api/v3/tags/%c3%28', '/api/v3/users/%e0%a4%a']) {
      const res = await rawRequest(ctx.url + path, 'GET', [auth]);
      assert.is(res.status, 404, path);
      assert.is(res.body.error.code, 'not_found');
      checker.check('GET', path, res.status, res.headers['content-type'] ?? null, res.body);
    }
    const route = await rawRequest(ctx.url + '/api/v3/u%ffsers/1', 'GET', [auth]);
    assert.is(route.status, 404);
    assert.is(route.body.error.code, 'not_found');
    assert.equal(ctx.printed, [], 'nothing printed (no stack)');
  },
);

t('1: 80,000 keys sent to a body-less operation answer at most 100 details', async (ctx) => {
  const big: Record<string, number> = {};
  for (let i = 0; i < 80_000; i++) big['k' + i] = 1;
  const text = JSON.stringify(big);
  const res = await rawRequest(
    ctx.url + '/api/v3/users',
    'GET',
    [auth, ['Content-Type', 'application/json'], ['Content-Length', String(text.length)]],
    text,
  );
  assert.is(res.status, 422);
  assert.is(res.body.error.code, 'unknown_field');
  assert.is(res.body.error.details.length, 100);
});

t('18: two Content-Type headers and application/jsonp are 415', async (ctx) => {
  const body = JSON.stringify({ name: 'x' });
  for (const types of [['application/json', 'application/json'], ['application/jsonp']]) {
    const res = await rawRequest(
      ctx.url + '/api/v3/tags',
      'POST',
      [
        auth,
        ['Idempotency-Key', 'k-1'],
        ...types.map((v): [string, string] => ['Content-Type', v]),
      ],
      body,
    );
    assert.is(res.status, 415, types.join(' + '));
  }
});

t('2: a client that hangs up mid-body leaves nothing on the console', async (ctx) => {
  const socket = net.connect(Number(new URL(ctx.url).port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `POST /api/v3/tags HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${SECRET}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":',
  );
  await new Promise((resolve) => setTimeout(resolve, 50));
  socket.destroy();
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(ctx.printed, []);
  const after = await rawRequest(ctx.url + '/api/v3/tags', 'GET', [auth]);
  assert.is(after.status, 200, 'the mock still answers');
});

t.run();
