// PostgreSQL: instances keep credentials in memory (src/domain/credentials/cache.ts) and check
// one version row instead of reading them again; a change made through another instance, or
// straight in the database as the admin CLI does, is refused by the very next request.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb } from '../../src/db/knex.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';

const PG = Boolean(process.env.TEST_DATABASE_URL);

const t = suite<{ a: Booted; b: Booted }>('credential cache across instances');
const test = PG ? t : t.skip;
if (!PG) console.log('  SKIP credential cache: PostgreSQL only (set TEST_DATABASE_URL).');

t.before(async (ctx) => {
  if (!PG) return;
  ctx.a = await boot();
  // Instance B: its own pool on A's schema (each app closes its own).
  const { url, schema } = ctx.a.database;
  const database = { url, schema, db: createDb(url, { schema }), drop: async () => undefined };
  ctx.b = await boot({ database });
});
t.after(async (ctx) => {
  if (!PG) return;
  await ctx.b.close();
  await ctx.a.close();
});

/** The statements instance `x` sends while `run` runs. */
async function statements(x: Booted, run: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const listener = (q: { sql: string }) => seen.push(q.sql);
  x.database.db.on('query', listener);
  try {
    await run();
  } finally {
    x.database.db.removeListener('query', listener);
  }
  return seen;
}

/** A credential issued over v3 by the root one (so it has an issuer chain too). */
async function issued(b: Booted): Promise<{ id: string; secret: string }> {
  const res = await b.api('POST', '/api/v3/credentials', {
    key: newKey(),
    body: { name: 'Cached', permissions: ['*'] },
  });
  assert.is(res.status, 201);
  return { id: res.body.data.id, secret: res.body.data.secret };
}

test('a known credential is not read again while nothing changed', async ({ a }) => {
  const c = await issued(a);
  assert.is((await a.api('GET', '/api/v3/credentials/current', { secret: c.secret })).status, 200);
  const sent = await statements(a, async () => {
    const res = await a.api('GET', '/api/v3/capabilities', { secret: c.secret });
    assert.is(res.status, 200);
  });
  assert.ok(!sent.some((s) => /from credentials/i.test(s)), sent.join('\n'));
  assert.ok(
    sent.some((s) => /from auth_version/i.test(s)),
    sent.join('\n'),
  );
});

test('revoked through instance B: instance A refuses the very next request', async ({ a, b }) => {
  const c = await issued(a);
  for (let i = 0; i < 2; i++)
    assert.is((await a.api('GET', '/api/v3/capabilities', { secret: c.secret })).status, 200);
  const revoked = await b.api('POST', `/api/v3/credentials/${c.id}/revocations`, {
    key: newKey(),
    secret: a.secret,
  });
  assert.is(revoked.status, 200, JSON.stringify(revoked.body));
  const res = await a.api('GET', '/api/v3/capabilities', { secret: c.secret });
  assert.is(res.status, 401);
  assert.is(res.body.error.code, 'credential_revoked');
});

test('issuer suspended in the database (as the admin CLI does): A refuses what it issued', async ({
  a,
  b,
}) => {
  const issuer = await a.app.services.accounts.createRootCredential({
    accountId: a.accountId,
    permissions: ['*'],
  });
  const res0 = await a.api('POST', '/api/v3/credentials', {
    key: newKey(),
    secret: issuer.secret,
    body: { name: 'Child', permissions: ['*'] },
  });
  const child = res0.body.data.secret as string;
  assert.is((await a.api('GET', '/api/v3/capabilities', { secret: child })).status, 200);
  await b.database.db('credentials').where({ id: issuer.id }).update({ status: 'suspended' });
  const res = await a.api('GET', '/api/v3/capabilities', { secret: child });
  assert.is(res.status, 401);
  assert.is(res.body.error.code, 'credential_suspended');
});

test('account blocked in the database: A refuses the next request', async ({ a, b }) => {
  const { id } = await a.app.services.accounts.createAccount({ name: 'To block' });
  const c = await a.app.services.accounts.createRootCredential({
    accountId: id,
    permissions: ['*'],
  });
  assert.is((await a.api('GET', '/api/v3/capabilities', { secret: c.secret })).status, 200);
  await b.database.db('accounts').where({ id }).update({ status: 'blocked' });
  const res = await a.api('GET', '/api/v3/capabilities', { secret: c.secret });
  assert.is(res.status, 403);
  assert.is(res.body.error.code, 'instance_blocked');
});

t.run();
