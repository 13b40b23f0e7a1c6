// engine: any
// The README's start, run as written: its command blocks under "## Start" go through bash against
// a fresh database (only `npm ci` is skipped, and port 3000 becomes a free one), and what they
// print is checked. A README whose first five minutes do not work fails here. The time from
// `npm start` to the third answer is printed (README quotes it); speed is the bench's to judge,
// never a timed assertion here.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { blocks, freePort, jsonLines, runBash } from '../helpers/doc-blocks.ts';

const t = suite('README start');

t('the Start blocks work verbatim on a fresh database', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-readme-'));
  const port = await freePort();
  const [setup, calls] = blocks('README.md', 'Start');
  assert.ok(setup && calls, 'two command blocks');
  const script = [
    'set -euo pipefail',
    setup!.replace(/^npm ci\b.*$/m, ''),
    'echo "SECRET=${SECRET:0:9}"',
    // One JSON answer a line, so that each can be checked.
    calls!.replace(/^curl /gm, 'echo; curl '),
    'echo',
  ]
    .join('\n')
    .replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`)
    .replaceAll('server.log', path.join(dir, 'server.log'));
  const started = performance.now();
  const { code, out, err } = await runBash(script, {
    PORT: String(port),
    DATABASE_URL: `sqlite:${path.join(dir, 'school.db')}`,
    FILES_DIR: path.join(dir, 'files'),
    LOG_FORMAT: 'json',
  });
  const seconds = (performance.now() - started) / 1000;
  fs.rmSync(dir, { recursive: true, force: true });
  assert.is(code, 0, `${out}\n${err}`);
  assert.match(out, /SECRET=sch_live_/);
  const answers = jsonLines(out);
  assert.is(answers.length, 3, out);
  assert.is(answers[0].data.object, 'credential');
  assert.equal([answers[1].data.object, answers[1].data.email], ['user', 'ana@example.com']);
  assert.equal(
    answers[2].data.map((u: any) => u.email),
    ['ana@example.com'],
  );
  console.log(`  (npm start to the third answer: ${seconds.toFixed(1)} s)`);
});

t.run();
