// How generation routers plug in after legacy authentication: routes are declared relative to
// their generation, /api/third reaches the v2 routes under /third, and whatever a route throws is
// rendered in its generation's envelope.
import crypto from 'node:crypto';
import { RateLimits } from '../../src/domain/ratelimit.ts';
import http from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../src/clock.ts';
import { migrate } from '../../src/db/migrate.ts';
import { AccountsService } from '../../src/domain/accounts/service.ts';
import { AppError } from '../../src/errors.ts';
import { legacyRoutes } from '../../src/http/legacy/index.ts';
import { createLogger } from '../../src/log.ts';
import { freshDatabase, type TestDatabase } from '../helpers/app.ts';

interface Ctx {
  database: TestDatabase;
  server: http.Server;
  url: string;
  key: string;
  accountId: number;
}

const t = suite<Ctx>('legacy routers');

t.before(async (ctx) => {
  ctx.database = await freshDatabase();
  const db = ctx.database.db;
  await migrate(db);
  const accounts = new AccountsService(db, systemClock, crypto.randomBytes(32));
  ctx.accountId = (await accounts.createAccount({ name: 'Routed school' })).id;
  ctx.key = (await accounts.createLegacyKey(ctx.accountId)).key;

  const v1 = new Router();
  v1.get('/usuario', (c) => {
    c.body = { code: 200, success: true, data: { account: c.state.legacy.accountId } };
  });
  v1.get('/usuario/:id', () => {
    throw new AppError('not_found');
  });
  v1.get('/boom', () => {
    throw new Error('bug');
  });
  const v2 = new Router();
  v2.get('/third/delivery', (c) => {
    c.body = { code: 200, data: { route: c.state.route ?? null } };
  });
  v2.get('/user/:identifier', () => {
    throw new AppError('domain_rule_violation');
  });

  const koa = new Koa();
  koa.silent = true;
  const logger = createLogger('silent');
  const rateLimits = new RateLimits(db, systemClock, {
    source: 1000,
    account: 1000,
    credential: 1000,
  });
  koa.use(legacyRoutes({ db, clock: systemClock, logger, rateLimits }, { v1, v2 }));
  ctx.server = http.createServer(koa.callback());
  await new Promise<void>((r) => ctx.server.listen(0, '127.0.0.1', r));
  ctx.url = `http://127.0.0.1:${(ctx.server.address() as { port: number }).port}`;
});

t.after(async (ctx) => {
  await new Promise((r) => ctx.server.close(r));
  await ctx.database.db.destroy();
  await ctx.database.drop();
});

async function get(ctx: Ctx, path: string) {
  const res = await fetch(ctx.url + path, { headers: { authorization: ctx.key } });
  return { status: res.status, body: await res.json() };
}

t('a v1 route sees the authenticated account', async (ctx) => {
  const res = await get(ctx, '/api/v1/usuario');
  assert.is(res.status, 200);
  assert.equal(res.body, { code: 200, success: true, data: { account: ctx.accountId } });
});

t(
  '/api/third and /api/v2/third reach the same v2 route; other v2 routes stay off /third',
  async (ctx) => {
    for (const path of ['/api/third/delivery', '/api/v2/third/delivery']) {
      const res = await get(ctx, path);
      assert.is(res.status, 200, path);
    }
    const res = await get(ctx, '/api/third/user/1');
    assert.is(res.status, 404);
    assert.is(res.body.version, 2);
  },
);

t('errors thrown by routes keep their status, in the envelope', async (ctx) => {
  const missing = await get(ctx, '/api/v1/usuario/9');
  assert.equal({ ...missing.body, msg: '' }, { success: false, code: 404, msg: '' });
  // A business rule is 409 on the legacy generations (v3 answers domain_rule_violation with 422).
  const rule = await get(ctx, '/api/v2/user/1');
  assert.is(rule.status, 409);
  assert.is(rule.body.code, 409);
  assert.is(rule.body.success, false);
  const bug = await get(ctx, '/api/v1/boom');
  assert.is(bug.status, 500);
  assert.is(bug.body.code, 500);
});

t('authentication runs before routing', async (ctx) => {
  const res = await fetch(ctx.url + '/api/v1/usuario');
  assert.is(res.status, 401);
});

t.run();
