// The README's start, run as written: its command blocks under "## Start" go through bash against
// a fresh database (only `npm ci` is skipped, and port 3000 becomes a free one), and what they
// print is checked. A README whose first five minutes do not work fails here. The time from
// `npm start` to the third answer is printed (README quotes it) and must stay under a minute.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = path.resolve(import.meta.dirname, '../..');
const t = suite('README start');

/** The ```sh blocks of a section of README.md. */
function blocks(section: string): string[] {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf(`\n## ${section}\n`);
  assert.ok(start >= 0, `README has a "## ${section}" section`);
  const end = readme.indexOf('\n## ', start + 1);
  const text = readme.slice(start, end < 0 ? undefined : end);
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

t('the Start blocks work verbatim on a fresh database', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-readme-'));
  const port = await freePort();
  const [setup, calls] = blocks('Start');
  assert.ok(setup && calls, 'two command blocks');
  const script = [
    'set -euo pipefail',
    setup!.replace(/^npm ci\s*$/m, ''),
    'echo "SECRET=${SECRET:0:9}"',
    // One JSON answer a line, so that each can be checked.
    calls!.replace(/^curl /gm, 'echo; curl '),
    'echo',
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
    },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  const started = performance.now();
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 120_000);
  const code = await new Promise<number | null>((r) => child.on('close', r));
  const seconds = (performance.now() - started) / 1000;
  clearTimeout(timer);
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {
    /* already gone */
  }
  fs.rmSync(dir, { recursive: true, force: true });
  assert.is(code, 0, `${out}\n${err}`);
  assert.match(out, /SECRET=sch_live_/);
  const answers = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
  assert.is(answers.length, 3, out);
  assert.is(answers[0].data.object, 'credential');
  assert.equal([answers[1].data.object, answers[1].data.email], ['user', 'ana@example.com']);
  assert.equal(
    answers[2].data.map((u: any) => u.email),
    ['ana@example.com'],
  );
  console.log(`  (npm start to the third answer: ${seconds.toFixed(1)} s)`);
  assert.ok(seconds < 60, `npm start to the third answer took ${seconds.toFixed(1)} s`);
});

t.run();
