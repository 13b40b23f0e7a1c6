// `npm run school -- files upload FILE --purpose P` (parts in parallel, a progress bar, resume)
// and `files download ID [-o FILE]`.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newKey } from '../helpers/app.ts';
import { bootFiles, sha256, type FilesBoot } from '../helpers/files.ts';
import { putPart } from '../helpers/files-suite.ts';
import { school } from '../helpers/school-cli.ts';

const MiB = 1024 * 1024;
const t = suite<{ b: FilesBoot; dir: string }>('school files upload / download');
t.before(async (ctx) => {
  ctx.b = await bootFiles('local');
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-files-cli-'));
});
t.after(async (ctx) => {
  await ctx.b.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

const run = (b: FilesBoot, dir: string, args: string[]) =>
  school(b, args, { SCHOOL_CONFIG_DIR: path.join(dir, 'config') });

t('upload in parts, then download the same bytes with a progress bar', async ({ b, dir }) => {
  const file = path.join(dir, 'big.bin');
  const bytes = crypto.randomBytes(17 * MiB + 5);
  fs.writeFileSync(file, bytes);
  const up = await run(b, dir, ['files', 'upload', file, '--purpose', 'attachment']);
  assert.is(up.code, 0, up.err.join('\n'));
  const fileId = up.out[0]!;
  const meta = (await b.api('GET', `/api/v3/files/${fileId}`)).body.data;
  assert.equal([meta.filename, meta.size, meta.sha256], ['big.bin', bytes.length, sha256(bytes)]);
  assert.match(up.drawn, /100% \| 17825797\/17825797 bytes/);
  const target = path.join(dir, 'copy.bin');
  const down = await run(b, dir, ['files', 'download', fileId, '-o', target]);
  assert.is(down.code, 0, down.err.join('\n'));
  assert.is(sha256(fs.readFileSync(target)), sha256(bytes));
  assert.match(down.drawn, /100%/);
});

t('an interrupted upload resumes: only the missing parts are sent', async ({ b, dir }) => {
  const file = path.join(dir, 'students.csv');
  const row = 'email,status\n' + 'ana@example.com,active\n'.repeat(500_000);
  fs.writeFileSync(file, row);
  const bytes = fs.readFileSync(file);
  // What a first run did before it was killed: the upload created, its first part sent.
  const created = await b.api('POST', '/api/v3/uploads', {
    key: newKey(),
    body: {
      purpose: 'import',
      filename: 'students.csv',
      content_type: 'text/csv',
      size: bytes.length,
      sha256: sha256(bytes),
    },
  });
  const u = created.body.data;
  assert.is(u.parts_count, 2);
  await putPart(created.body.part_urls[0].url, bytes.subarray(0, u.part_size));
  const state = path.join(dir, 'config', 'uploads', `${sha256(bytes)}-import.json`);
  fs.mkdirSync(path.dirname(state), { recursive: true });
  fs.writeFileSync(state, JSON.stringify({ id: u.id }));

  const up = await run(b, dir, ['files', 'upload', file, '--purpose', 'import']);
  assert.is(up.code, 0, up.err.join('\n'));
  assert.ok(up.err.includes(`Resuming upload ${u.id}.`), up.err.join('\n'));
  // The bar starts at the part the server already held.
  assert.match(up.drawn, new RegExp(`\\b${u.part_size}/${bytes.length} bytes`));
  const after = (await b.api('GET', `/api/v3/uploads/${u.id}`)).body.data;
  assert.equal([after.status, after.file_id], ['completed', up.out[0]]);
  assert.not.ok(fs.existsSync(state));
});

t('usage errors exit 2', async ({ b, dir }) => {
  assert.is((await run(b, dir, ['files', 'upload', 'x.csv'])).code, 2);
  assert.is((await run(b, dir, ['files', 'upload', 'x.csv', '--purpose', 'export'])).code, 2);
});

t.run();
