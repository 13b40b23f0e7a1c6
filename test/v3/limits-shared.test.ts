// Rate limits shared by two instances on one PostgreSQL schema (src/domain/ratelimit-shared.ts):
// counts are kept in memory and written in one statement per sync, not one per request, and the
// two instances together admit at most limit + slack in a window (the bound in DECISIONS.md).
// The periodic flush is stopped here, so every sync is one that a request asked for.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb } from '../../src/db/knex.ts';
import { slackOf } from '../../src/domain/ratelimit-shared.ts';
import { boot, type Booted } from '../helpers/app.ts';

const PG = Boolean(process.env.TEST_DATABASE_URL);
const LIMIT = 100;

const t = suite<{ a: Booted; b: Booted }>('rate limits shared across instances');
const test = PG ? t : t.skip;
if (!PG) console.log('  SKIP shared rate limits: PostgreSQL only (set TEST_DATABASE_URL).');

const env = { RATE_LIMIT_CREDENTIAL: String(LIMIT) };

t.before(async (ctx) => {
  if (!PG) return;
  ctx.a = await boot({ env });
  // Instance B: its own pool on A's schema (each app closes its own).
  const { url, schema } = ctx.a.database;
  const database = { url, schema, db: createDb(url, { schema }), drop: async () => undefined };
  ctx.b = await boot({ env, database });
  for (const x of [ctx.a, ctx.b]) clearInterval((x.app.services.rateLimits.shared as any).timer);
});
t.after(async (ctx) => {
  if (!PG) return;
  await ctx.b.close();
  await ctx.a.close();
});

const stored = async (b: Booted, key: string) =>
  (await b.database.db('rate_limits').where({ key }).first())?.points ?? null;

test('requests within the slack write nothing; the sync past it writes their sum', async ({
  a,
}) => {
  const key = `credential:${a.credentialId}`;
  for (let i = 0; i < slackOf(LIMIT); i++) {
    const res = await a.api('GET', '/api/v3/capabilities');
    assert.is(res.status, 200);
    assert.is(res.headers.get('ratelimit-remaining'), String(LIMIT - i - 1));
  }
  assert.is(await stored(a, key), null);
  const res = await a.api('GET', '/api/v3/capabilities');
  assert.is(res.headers.get('ratelimit-remaining'), String(LIMIT - slackOf(LIMIT) - 1));
  assert.is(await stored(a, key), slackOf(LIMIT) + 1);
});

test('two instances admit at most limit + slack in a window, then both answer 429', async ({
  a,
  b,
}) => {
  const c = await a.app.services.accounts.createRootCredential({
    accountId: a.accountId,
    permissions: ['*'],
  });
  let admitted = 0;
  const limited: Record<string, any> = {};
  for (let i = 0; i < 2 * LIMIT && Object.keys(limited).length < 2; i++) {
    const [name, x] = i % 2 ? ['b', b] : ['a', a];
    const res = await x.api('GET', '/api/v3/capabilities', { secret: c.secret });
    if (res.status === 200) admitted++;
    else if (res.status === 429) limited[name] ??= res;
    else assert.unreachable(`status ${res.status}`);
  }
  assert.ok(admitted >= LIMIT, `admitted ${admitted}`);
  assert.ok(admitted <= LIMIT + slackOf(LIMIT), `admitted ${admitted}`);
  for (const res of Object.values(limited)) {
    assert.is(res.body.error.code, 'rate_limit_exceeded');
    const retry = Number(res.headers.get('retry-after'));
    assert.ok(retry >= 1 && retry <= 60, String(retry));
    assert.is(res.body.error.retry_after_seconds, retry);
    assert.is(res.headers.get('ratelimit-limit'), String(LIMIT));
  }
  assert.is(Object.keys(limited).length, 2);
});

t.run();
