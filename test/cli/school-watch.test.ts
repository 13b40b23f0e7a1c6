// `npm run school -- operations watch ID`: a progress bar until the operation finishes, the final
// status on stdout, exit 0 only for `succeeded`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../../src/cli/school/main.ts';
import { pollDelay } from '../../src/cli/school/watch.ts';
import { boot, type Booted } from '../helpers/app.ts';
import { submit, waitFor } from '../helpers/operations.ts';

const t = suite<{ b: Booted; dir: string }>('school operations watch');
t.before(async (ctx) => {
  ctx.b = await boot();
  await ctx.b.app.startWorkers();
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-watch-'));
});
t.after(async (ctx) => {
  await ctx.b.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

async function run(b: Booted, dir: string, id: string) {
  const out: string[] = [];
  const err: string[] = [];
  const bars = new PassThrough();
  let drawn = '';
  bars.on('data', (c) => (drawn += c.toString()));
  const code = await main(['operations', 'watch', id, '--base-url', b.url, '--api-key', b.secret], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env: { SCHOOL_CONFIG_DIR: dir, SCHOOL_POLL_MS: '20' },
    bars,
  });
  return { code, out, err, drawn };
}

t('follows a batch to succeeded: bar with done/total, exit 0', async ({ b, dir }) => {
  const items = Array.from({ length: 300 }, (_, i) => ({
    key: `w${i}`,
    payload: { email: `watch${i}@example.com`, name: `W ${i}` },
  }));
  const res = await submit(b, 'users.upsert', items);
  const r = await run(b, dir, res.body.data.id);
  assert.is(r.code, 0, r.err.join('\n'));
  assert.equal(r.out, [
    `Operation ${res.body.data.id} (users.upsert): succeeded, 300 done, 0 failed of 300`,
  ]);
  assert.match(r.drawn, /300\/300 done, 0 failed/);
  assert.match(r.drawn, /100%/);
});

t('partially_succeeded and unknown operations exit 1', async ({ b, dir }) => {
  const res = await submit(b, 'tags.assign', [
    { key: 'x', payload: { user_id: '9999', tag_id: '9999' } },
  ]);
  await waitFor(b, res.body.data.id);
  const failed = await run(b, dir, res.body.data.id);
  assert.is(failed.code, 1);
  assert.match(failed.out[0]!, /: failed, 0 done, 1 failed of 1 \(domain_rule_violation: /);
  const missing = await run(b, dir, '999999');
  assert.is(missing.code, 1);
  assert.match(missing.err[0]!, /^error: not_found: /);
});

t('the suggested schedule: every 2 s for 30 s, then every 10 s', () => {
  assert.is(pollDelay(0), 2000);
  assert.is(pollDelay(29_999), 2000);
  assert.is(pollDelay(30_000), 10_000);
  assert.is(pollDelay(3_600_000), 10_000);
});

t.run();
