// engine: any
// docs/files.md's upload "in three calls", run as written: the README's start brings up a fresh
// server (port 3000 becomes a free one), then the guide's curl block uploads a CSV from a folder
// of its own; the completion it prints must be a completed upload of exactly those bytes, and the
// file must serve them back.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { blocks, freePort, jsonLines, runBash } from '../helpers/doc-blocks.ts';

const t = suite('guide: upload in three calls');

t('the curl block uploads a file on a fresh server', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-guide-upload-'));
  const work = path.join(dir, 'work');
  fs.mkdirSync(work);
  const csv = 'email,product_external_id,status\nana@example.com,COURSE-1,active\n';
  fs.writeFileSync(path.join(work, 'students.csv'), csv);
  const port = await freePort();
  const [setup] = blocks('README.md', 'Start');
  const recipe = blocks('docs/files.md', 'Uploads and files').find((b) =>
    b.includes('/completions'),
  );
  assert.ok(setup && recipe, 'the start block and the upload block');
  const script = [
    'set -euo pipefail',
    setup!.replace(/^npm ci\b.*$/m, ''),
    `cd ${JSON.stringify(work)}`,
    recipe!,
    'echo',
    // The file the completion names, through a download link.
    `LINK=$(curl -s -X POST localhost:3000/api/v3/files/$(curl -s localhost:3000/api/v3/uploads/$ID -H "Authorization: Bearer $SECRET" | jq -r .data.file_id)/download-links -H "Authorization: Bearer $SECRET" -H 'Idempotency-Key: link-1' | jq -r .data.url)`,
    'curl -s "$LINK" -o copy.csv; echo "COPY=$(sha256sum copy.csv | cut -d" " -f1)"',
  ]
    .join('\n')
    .replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`)
    .replaceAll('localhost:3000', `127.0.0.1:${port}`)
    .replaceAll('server.log', path.join(dir, 'server.log'));
  const { code, out, err } = await runBash(script, {
    PORT: String(port),
    DATABASE_URL: `sqlite:${path.join(dir, 'school.db')}`,
    FILES_DIR: path.join(dir, 'files'),
    LOG_FORMAT: 'json',
  });
  fs.rmSync(dir, { recursive: true, force: true });
  assert.is(code, 0, `${out}\n${err}`);
  const sum = crypto.createHash('sha256').update(csv).digest('hex');
  const [done] = jsonLines(out);
  assert.ok(done, out);
  assert.equal(
    [done.data.status, done.data.filename, done.data.size, done.data.sha256],
    ['completed', 'students.csv', Buffer.byteLength(csv), sum],
    out,
  );
  assert.match(done.data.file_id, /^[1-9][0-9]*$/);
  assert.match(out, new RegExp(`COPY=${sum}`));
});

t.run();
