// engine: any
// The guide's plans example, run as written: the README's start brings a server up on a fresh
// database, the guide's manifest (a product with two modules, a tag and a delivery) is written to
// school.yaml, and the guide's command block goes through bash; what it prints and pulls is checked.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { blocks, freePort, npxShim, runBash } from '../helpers/doc-blocks.ts';

const t = suite('guide: plans example');

t('the manifest plans, applies and pulls back unchanged, as the guide shows', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-guide-plans-'));
  const port = await freePort();
  const [setup] = blocks('README.md', 'Start', 'sh');
  const [manifest] = blocks('docs/plans.md', 'Plans: the configuration as a file', 'yaml');
  const [commands] = blocks('docs/plans.md', 'Plans: the configuration as a file', 'sh');
  assert.ok(setup && manifest && commands);
  fs.writeFileSync(path.join(dir, 'school.yaml'), manifest!);
  const script = [
    'set -euo pipefail',
    setup!.replace(/^npm ci\b.*$/m, ''),
    `export SCHOOL_BASE_URL=http://127.0.0.1:${port}`,
    commands!.replace(/\b(school\.yaml|plan\.txt|pulled\.yaml)\b/g, (f) => path.join(dir, f)),
  ]
    .join('\n')
    .replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`)
    .replaceAll('server.log', path.join(dir, 'server.log'));
  const { code, out, err } = await runBash(script, {
    PATH: `${npxShim(path.join(dir, 'bin'))}:${process.env.PATH}`,
    PORT: String(port),
    DATABASE_URL: `sqlite:${path.join(dir, 'school.db')}`,
    FILES_DIR: path.join(dir, 'files'),
    LOG_FORMAT: 'json',
    NO_COLOR: '1',
  });
  try {
    assert.is(code, 0, `${out}\n${err}`);
    const planned = fs.readFileSync(path.join(dir, 'plan.txt'), 'utf8');
    for (const line of [
      '+ tag.buyer',
      '+ product.python',
      '+ module.basics',
      '+ module.projects',
      '+ delivery.checkout',
    ])
      assert.ok(planned.includes(line), planned);
    assert.match(planned, /Plan \d+: 5 to create, 0 to update, 0 to delete, 0 unchanged\./);
    assert.match(out, /\(plan\.apply\): succeeded, 5 done, 0 failed of 5/);
    assert.match(
      out.trim().split('\n').at(-1)!,
      /0 to create, 0 to update, 0 to delete, 5 unchanged/,
    );
    const pulled = parse(fs.readFileSync(path.join(dir, 'pulled.yaml'), 'utf8'));
    const delivery = pulled.resources.find((r: any) => r.type === 'delivery');
    assert.equal(delivery.properties.products, [{ product_id: { ref: 'product.python' } }]);
    assert.equal(delivery.properties.tag_ids, [{ ref: 'tag.buyer' }]);
    assert.equal(delivery.properties.external_ids, ['python-2026']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

t.run();
