// A client that hangs up mid-body is routine, not our failure, on every path that reads a body:
// v3, the OAuth token and revocation endpoints, the admin sign-in pages, postbacks and the legacy
// generations. Each is one info request line with status 499 and `client_closed`, and no line at
// error level (no stack, no 500), on both engines.
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { createLogger } from '../../src/log.ts';

interface Line {
  level: number;
  msg: string;
  status?: number;
  route?: string;
  client_closed?: boolean;
  err?: unknown;
}

const t = suite<{ b: Booted; lines: Line[]; legacyKey: string; postback: string }>('hang-ups');
t.before(async (ctx) => {
  ctx.lines = [];
  const destination = { write: (s: string) => void ctx.lines.push(JSON.parse(s)) };
  ctx.b = await boot({ logger: createLogger('info', destination) });
  ctx.legacyKey = (await ctx.b.app.services.accounts.createLegacyKey(ctx.b.accountId)).key;
  const delivery = await ctx.b.api('POST', '/api/v3/sales/deliveries', {
    body: {
      gateway: 'generic',
      name: 'Hang-ups',
      external_ids: ['hang-1'],
      secret: 's3cret-value',
    },
    key: newKey(),
  });
  assert.is(delivery.status, 201);
  ctx.postback = new URL(delivery.body.data.postback_url).pathname;
});
t.after(async (ctx) => ctx.b.close());

/**
 * Sends the head and part of a 1,000-byte body, then hangs up, once the server has started to read
 * the body (after 50 ms) and once at once (before it reads: while it authenticates); the request
 * line of each. Both are 499, and nothing is logged at error level.
 */
async function hangUp(ctx: { b: Booted; lines: Line[] }, head: string): Promise<Line> {
  const [late, early] = [await hangUpAfter(ctx, head, 50), await hangUpAfter(ctx, head, 0)];
  assert.is(early.status, late.status);
  assert.is(early.client_closed, late.client_closed);
  return late;
}

async function hangUpAfter(
  ctx: { b: Booted; lines: Line[] },
  head: string,
  wait: number,
): Promise<Line> {
  const before = ctx.lines.length;
  const socket = net.connect(Number(new URL(ctx.b.url).port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`${head}Host: 127.0.0.1\r\nContent-Length: 1000\r\n\r\ngrant_type=`);
  if (wait) await new Promise((resolve) => setTimeout(resolve, wait));
  socket.destroy();
  let line: Line | undefined;
  for (let i = 0; i < 1000 && !line; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    line = ctx.lines.slice(before).find((l) => l.msg === 'request');
  }
  assert.ok(line, 'a request line was written');
  const errors = ctx.lines.slice(before).filter((l) => l.level >= 50);
  assert.equal(errors, [], 'nothing logged at error level');
  return line!;
}

const FORM = 'Content-Type: application/x-www-form-urlencoded\r\n';
const JSON_TYPE = 'Content-Type: application/json\r\n';

for (const path of [
  '/oauth/token',
  '/oauth/revoke',
  '/admin/sign-in',
  '/admin/sign-in/two-factor',
  '/admin/sign-out',
  '/oauth/authorize?response_type=code&client_id=service-cli',
]) {
  t(`POST ${path}: 499, client_closed, at info level`, async (ctx) => {
    const line = await hangUp(ctx, `POST ${path} HTTP/1.1\r\n${FORM}`);
    assert.is(line.status, 499);
    assert.is(line.client_closed, true);
    assert.is(line.level, 30);
  });
}

t('POST to a postback URL: 499, client_closed, at info level', async (ctx) => {
  const line = await hangUp(
    ctx,
    `POST ${ctx.postback} HTTP/1.1\r\n${JSON_TYPE}X-Postback-Secret: s3cret-value\r\n`,
  );
  assert.is(line.status, 499);
  assert.is(line.client_closed, true);
});

t('POST /api/v1/usuario/update and /api/v2/third/delivery: 499 as well', async (ctx) => {
  for (const path of ['/api/v1/usuario/update/1', '/api/v2/third/delivery']) {
    const auth = `Authorization: ${ctx.legacyKey}\r\n`;
    const line = await hangUp(ctx, `POST ${path} HTTP/1.1\r\n${JSON_TYPE}${auth}`);
    assert.is(line.status, 499, path);
    assert.is(line.client_closed, true);
  }
});

t('POST /api/v3/users: 499 as well', async (ctx) => {
  const auth = `Authorization: Bearer ${ctx.b.secret}\r\nIdempotency-Key: ${newKey()}\r\n`;
  const line = await hangUp(ctx, `POST /api/v3/users HTTP/1.1\r\n${JSON_TYPE}${auth}`);
  assert.is(line.status, 499);
  assert.is(line.client_closed, true);
});

t.run();
