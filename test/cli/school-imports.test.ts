// `npm run school -- imports run FILE` (upload, analyse, report, process) and `exports create` /
// `exports download ID`, against the real server with its workers.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { bootFiles, type FilesBoot } from '../helpers/files.ts';
import { catalog } from '../helpers/imports.ts';
import { school } from '../helpers/school-cli.ts';

const t = suite<{ b: FilesBoot; dir: string }>('school imports / exports');
t.before(async (ctx) => {
  ctx.b = await bootFiles('local');
  await ctx.b.app.startWorkers();
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-imports-cli-'));
});
t.after(async (ctx) => {
  await ctx.b.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

const run = (b: FilesBoot, dir: string, args: string[]) =>
  school(b, args, { SCHOOL_CONFIG_DIR: path.join(dir, 'config'), SCHOOL_POLL_MS: '50' });

const CSV = [
  'E-mail,Produto,Situacao',
  'ana@example.com,CLI-1,active',
  'not-an-email,CLI-1,active',
  'bia@example.com,NOPE,active',
  'caio@example.com,CLI-1,',
].join('\n');
const MAP = '--map=email=E-mail,product_external_id=Produto,status=Situacao';

t('imports run --dry-run: analysed and reported, nothing applied', async ({ b, dir }) => {
  await catalog(b, 'CLI-1');
  const file = path.join(dir, 'dry.csv');
  fs.writeFileSync(file, CSV);
  const res = await run(b, dir, ['imports', 'run', file, MAP, '--dry-run']);
  assert.is(res.code, 0, res.err.join('\n'));
  assert.match(res.out[0]!, /^Import \d+: 4 rows, 2 ready, 2 not ready, 0 ignored\.$/);
  assert.equal(res.out.slice(1), [
    '  row 2: email_invalid (not-an-email)',
    '  row 3: product_unknown (bia@example.com)',
  ]);
  const users = await b.api('GET', '/api/v3/users?email=ana%40example.com');
  assert.is(users.body.data.length, 0, 'a dry run applies nothing');
});

t('imports run: the ready rows are applied, with a progress bar', async ({ b, dir }) => {
  const file = path.join(dir, 'real.csv');
  fs.writeFileSync(file, CSV.replace(/CLI-1/g, 'CLI-2'));
  await catalog(b, 'CLI-2');
  const res = await run(b, dir, ['imports', 'run', file, MAP]);
  // Two rows are not ready: the attempt applies the two ready ones and succeeds.
  assert.is(res.code, 0, res.err.join('\n'));
  assert.match(
    res.out.at(-1)!,
    /^Operation \d+ \(import\.process\): succeeded, 2 done, 0 failed of 2$/,
  );
  assert.match(res.drawn, /100%/);
  for (const email of ['ana@example.com', 'caio@example.com']) {
    const users = await b.api('GET', `/api/v3/users?email=${encodeURIComponent(email)}`);
    assert.is(users.body.data.length, 1, email);
  }
});

t(
  'imports run: bad flags are usage errors (exit 2), before anything is sent',
  async ({ b, dir }) => {
    const file = path.join(dir, 'x.csv');
    fs.writeFileSync(file, CSV);
    const bad = await run(b, dir, ['imports', 'run', file, '--map=mail=E-mail']);
    assert.is(bad.code, 2);
    assert.match(bad.err.join('\n'), /--map takes FIELD=HEADER pairs.*got "mail=E-mail"/);
    const policy = await run(b, dir, ['imports', 'run', file, '--duplicate-policy', 'first']);
    assert.is(policy.code, 2);
    const uploads = await b.app.db('uploads').count({ n: '*' }).first();
    const before = Number(uploads!.n);
    await run(b, dir, ['imports', 'run', file, '--map=status']);
    const after = await b.app.db('uploads').count({ n: '*' }).first();
    assert.is(Number(after!.n), before, 'nothing uploaded for a usage error');
  },
);

t(
  'exports create: waits, downloads the CSV; exports download ID fetches it again',
  async ({ b, dir }) => {
    await b.api('POST', '/api/v3/users', {
      body: { email: 'export-me@example.com', name: 'Export Me' },
      key: crypto.randomUUID(),
    });
    const target = path.join(dir, 'users.csv');
    const res = await run(b, dir, ['exports', 'create', '--columns', 'email,name', '-o', target]);
    assert.is(res.code, 0, res.err.join('\n'));
    const text = fs.readFileSync(target, 'utf8');
    assert.match(text.split(/\r?\n/)[0]!, /^email,name$/);
    assert.ok(text.includes('export-me@example.com,Export Me'), text);
    const id = /Export (\d+) queued/.exec(res.err.join('\n'))![1]!;
    const again = path.join(dir, 'again.csv');
    const down = await run(b, dir, ['exports', 'download', id, '-o', again]);
    assert.is(down.code, 0, down.err.join('\n'));
    assert.is(fs.readFileSync(again, 'utf8'), text);
  },
);

t(
  'exports create: filters the server refuses are its 422 (exit 1); bad JSON exit 2',
  async ({ b, dir }) => {
    const res = await run(b, dir, ['exports', 'create', '--filters', '{"access":"sometimes"}']);
    assert.is(res.code, 1);
    assert.match(res.err.join('\n'), /create export: validation_failed/);
    const bad = await run(b, dir, ['exports', 'create', '--filters', 'access=accessed']);
    assert.is(bad.code, 2);
    assert.match(bad.err.join('\n'), /--filters takes a JSON object/);
  },
);

t('exports create --filters: only the matching students are written', async ({ b, dir }) => {
  const tag = await b.api('POST', '/api/v3/tags', {
    body: { name: 'cli-export' },
    key: crypto.randomUUID(),
  });
  assert.is(tag.status, 201, JSON.stringify(tag.body));
  const user = await b.api('POST', '/api/v3/users', {
    body: { email: 'tagged@example.com', name: 'Tagged' },
    key: crypto.randomUUID(),
  });
  assert.is(user.status, 201, JSON.stringify(user.body));
  const tagged = await b.api('PUT', `/api/v3/users/${user.body.data.id}/tags/${tag.body.data.id}`);
  assert.ok(tagged.status < 300, JSON.stringify(tagged.body));
  const target = path.join(dir, 'tagged.csv');
  const filters = JSON.stringify({ tag_id: [tag.body.data.id] });
  const res = await run(b, dir, [
    'exports',
    'create',
    '--columns',
    'email',
    '--filters',
    filters,
    '-o',
    target,
  ]);
  assert.is(res.code, 0, res.err.join('\n'));
  assert.equal(fs.readFileSync(target, 'utf8').trim().split(/\r?\n/), [
    'email',
    'tagged@example.com',
  ]);
});

t.run();
