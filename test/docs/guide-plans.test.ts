// engine: any
// The guide's plans example, run as written: the README's start brings a server up on a fresh
// database, the guide's manifest (a product with two modules, a tag and a delivery) is written to
// school.yaml, and the guide's command block goes through bash; what it prints and pulls is checked.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';

const ROOT = path.resolve(import.meta.dirname, '../..');
const t = suite('guide: plans example');

/** The ```lang blocks of a section of a Markdown file. */
function blocks(file: string, section: string, lang: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const start = text.indexOf(`\n## ${section}\n`);
  assert.ok(start >= 0, `${file} has a "## ${section}" section`);
  const end = text.indexOf('\n## ', start + 1);
  const part = text.slice(start, end < 0 ? undefined : end);
  return [...part.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

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
  const child = spawn('bash', ['-c', script], {
    cwd: ROOT,
    detached: true, // its own process group: the server it starts goes with it
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: `sqlite:${path.join(dir, 'school.db')}`,
      FILES_DIR: path.join(dir, 'files'),
      LOG_FORMAT: 'json',
      NO_COLOR: '1',
    },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 120_000);
  const code = await new Promise<number | null>((r) => child.on('close', r));
  clearTimeout(timer);
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {
    /* already gone */
  }
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
