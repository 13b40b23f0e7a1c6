// `npm run school -- plan FILE.yaml | apply PLAN_ID | manifest pull`: a YAML manifest planned as a
// diff with the plan's id, applied with a progress bar, and pulled back as YAML that plans to
// nothing but unchanged.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { main } from '../../src/cli/school/main.ts';
import { boot, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted; dir: string }>('school plan, apply, manifest pull');
t.before(async (ctx) => {
  ctx.b = await boot();
  await ctx.b.app.startWorkers();
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-plans-'));
});
t.after(async (ctx) => {
  await ctx.b.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

async function run(b: Booted, dir: string, args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const bars = new PassThrough();
  let drawn = '';
  bars.on('data', (c) => (drawn += c.toString()));
  const code = await main([...args, '--base-url', b.url, '--api-key', b.secret], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env: { SCHOOL_CONFIG_DIR: dir, SCHOOL_POLL_MS: '20', NO_COLOR: '1' },
    bars,
  });
  return { code, out, err, drawn };
}

const YAML_SCHOOL = `version: 1
resources:
  - type: product
    key: python
    properties: { name: Python from zero }
  - type: module
    key: basics
    properties: { product_id: { ref: product.python }, name: Basics, kind: module }
  - type: tag
    key: vip
    properties: { name: vip }
`;

t(
  'plan prints a diff and the id; apply follows the operation; pull plans back unchanged',
  async ({ b, dir }) => {
    const file = path.join(dir, 'school.yaml');
    fs.writeFileSync(file, YAML_SCHOOL);
    const planned = await run(b, dir, ['plan', file]);
    assert.is(planned.code, 0, planned.err.join('\n'));
    const last = planned.out.at(-1)!;
    const id = /^Plan (\d+):/.exec(last)![1]!;
    assert.equal(planned.out.slice(0, -1), [
      '+ tag.vip',
      '    name: "vip"',
      '+ product.python',
      '    name: "Python from zero"',
      '+ module.basics',
      '    product_id: {"ref":"product.python"}',
      '    name: "Basics"',
      '    kind: "module"',
    ]);
    assert.match(last, `Plan ${id}: 3 to create, 0 to update, 0 to delete, 0 unchanged.`);

    const applied = await run(b, dir, ['apply', id]);
    assert.is(applied.code, 0, applied.err.join('\n'));
    assert.match(applied.out.join('\n'), /\(plan\.apply\): succeeded, 3 done, 0 failed of 3/);
    assert.match(applied.drawn, /3\/3 done/);

    fs.writeFileSync(file, YAML_SCHOOL.replace('Python from zero', 'Python 2'));
    const update = await run(b, dir, ['plan', file]);
    assert.equal(update.out.slice(0, -1), [
      `~ product.python (${(await b.api('GET', '/api/v3/products')).body.data[0].id})`,
      '    name: "Python from zero" -> "Python 2"',
    ]);

    const pulled = await run(b, dir, ['manifest', 'pull']);
    assert.is(pulled.code, 0, pulled.err.join('\n'));
    const manifest = parse(pulled.out.join('\n'));
    assert.equal(manifest, (await b.api('GET', '/api/v3/manifest')).body.data);
    fs.writeFileSync(file, pulled.out.join('\n'));
    const again = await run(b, dir, ['plan', file]);
    assert.match(again.out.at(-1)!, /0 to create, 0 to update, 0 to delete, 3 unchanged/);
  },
);

t('an invalid manifest prints each problem at its path; exit 1', async ({ b, dir }) => {
  const file = path.join(dir, 'bad.yaml');
  fs.writeFileSync(
    file,
    'version: 1\nresources:\n  - { type: tag, key: t, properties: { name: "" } }\n',
  );
  const r = await run(b, dir, ['plan', file]);
  assert.is(r.code, 1);
  assert.is(r.err[0], 'error: plan_invalid: The plan is invalid.');
  assert.ok(
    r.err.some((l) => l.startsWith('  resources.0.properties.name: too_short')),
    r.err.join('\n'),
  );
});

t.run();
