// `school trigger EVENT_TYPE`: each fixture makes the account record an event of its type through
// the v3 routes; live credentials are refused.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FIXTURES } from '../../src/cli/school/trigger.ts';
import { boot, type Booted } from '../helpers/app.ts';
import { school } from '../helpers/school-cli.ts';

const t = suite<{ b: Booted; secret: string }>('school trigger');
t.before(async (ctx) => {
  ctx.b = await boot();
  await ctx.b.app.startWorkers();
  const { id } = await ctx.b.app.services.accounts.createAccount({ name: 'Try', sandbox: true });
  const root = await ctx.b.app.services.accounts.createRootCredential({
    accountId: id,
    permissions: ['*'],
    test: true,
  });
  ctx.secret = root.secret;
});
t.after(async (ctx) => ctx.b.close());

async function run(b: Booted, secret: string, args: string[]) {
  const r = await school({ url: b.url, secret }, args);
  return { code: r.code, out: r.out.join('\n'), err: r.err.join('\n') };
}

async function count(b: Booted, secret: string, type: string) {
  const res = await b.api('GET', `/api/v3/events?type=${type}&limit=200`, { secret });
  assert.is(res.status, 200, res.text);
  return res.body.data.length as number;
}

t('every fixture records an event of its type', async ({ b, secret }) => {
  for (const type of Object.keys(FIXTURES)) {
    const before = await count(b, secret, type);
    const res = await run(b, secret, ['trigger', type]);
    assert.is(res.code, 0, `${type}: ${res.err}`);
    assert.match(res.out, new RegExp(`^Triggered ${type.replace('.', '\\.')} `));
    // Operations finish in the workers: wait for the event rather than assume it is there.
    let after = await count(b, secret, type);
    for (let i = 0; i < 300 && after === before; i++) {
      await new Promise((r) => setTimeout(r, 50));
      after = await count(b, secret, type);
    }
    assert.ok(after > before, `${type}: no event recorded`);
  }
});

t(
  'unknown types list what can be triggered; live credentials are refused',
  async ({ b, secret }) => {
    const unknown = await run(b, secret, ['trigger', 'user.exploded']);
    assert.is(unknown.code, 2);
    assert.match(unknown.err, /cannot trigger user\.exploded; one of: user\.created, /);
    const before = await count(b, b.secret, 'user.created');
    const live = await run(b, b.secret, ['trigger', 'user.created']);
    assert.is(live.code, 2);
    assert.match(live.err, /only with a test credential/);
    assert.is(await count(b, b.secret, 'user.created'), before, 'nothing created on live');
  },
);

t.run();
