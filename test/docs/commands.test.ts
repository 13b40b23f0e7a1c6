// engine: any
// Every command block of docs/*.md and README.md (```sh and ```console fences) runs here, in order,
// through bash against one fresh server (`npm start` on a fresh SQLite database, its demo secrets
// exported as the docs name them), and its exit code is checked. A block that cannot run here (a
// browser, another machine, a public host, something that never ends or changes the working tree)
// says so in the markdown with `<!-- not-run: why -->` on the line before its fence; those are
// counted, and a marker anywhere else is an error. README's Start has its own test (readme.test.ts)
// and says so with such a marker.
//
// What the docs take for granted is provided: $SECRET (and $KEY), $LEGACY_KEY, $API, a sandbox
// account's $SANDBOX_SECRET (and $TEST_KEY), `uuidgen` (not on every machine), `npx school` as the
// package's bin without npm's lookup in between (helpers/doc-blocks.ts npxShim says why), the server started
// with METRICS_PORT, and $HOOK_URL: a webhook receiver on 127.0.0.1 (answers 204) that the server
// may reach (WEBHOOK_ALLOW_PRIVATE_TARGETS). Everything else a block needs (products, deliveries, files, the ids
// it uses) an earlier line of its doc creates, and a file shown as a ```yaml block whose first line
// is `# name.yaml` is saved under that name, as a reader would. The blocks run in a scratch folder
// that links to the repository, so files they write (students.csv, users.csv) land there. `curl`
// fails on a 5xx answer or no answer at all, and every status a block's curls receive is checked:
// 2xx only, unless the block shows an error and says which with `<!-- expect: 409 why -->` before
// its fence (then each named status must be seen, and no other).
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { npxShim } from '../helpers/doc-blocks.ts';
import { npmScriptArgs } from '../helpers/npm-scripts.ts';
import { startProcess, type Proc } from '../server/processes.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DOCS = fs
  .readdirSync(path.join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`)
  .concat('README.md');
const MARKER = /^<!-- (?:not-run: (.+?)|expect: (\d{3}(?:, \d{3})*) (.+?)) -->$/;

export interface Block {
  file: string;
  line: number;
  lang: string;
  code: string;
  /** Why it is not run, when its fence is preceded by a not-run marker. */
  notRun?: string;
  /** The non-2xx statuses the block shows (an expect marker), each to be seen. */
  expect?: number[];
}

/** The command blocks of a markdown file, with the marker before each; stray markers throw. */
export function commandBlocks(file: string, text: string): Block[] {
  const lines = text.split('\n');
  // The nearest non-blank line after / before line i (prettier puts a blank line after a comment).
  const near = (i: number, step: 1 | -1) => {
    let j = i + step;
    while (lines[j] !== undefined && lines[j]!.trim() === '') j += step;
    return lines[j] ?? '';
  };
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const kind = /^<!-- (not-run|expect)\b/.exec(lines[i]!)?.[1];
    if (kind && !MARKER.test(lines[i]!))
      throw new Error(`${file}:${i + 1}: write <!-- not-run: why --> or <!-- expect: 409 why -->`);
    if (kind && !/^```/.test(near(i, 1)))
      throw new Error(`${file}:${i + 1}: a marker (${kind}) must be right before a fence`);
    const open = /^```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    const lang = open[1]!;
    if (lang === 'sh' || lang === 'console') {
      const marker = MARKER.exec(near(i, -1));
      blocks.push({
        file,
        line: i + 1,
        lang,
        code: lines.slice(i + 1, end).join('\n'),
        ...(marker?.[1] ? { notRun: marker[1] } : {}),
        ...(marker?.[2] ? { expect: marker[2].split(', ').map(Number) } : {}),
      });
    }
    i = end;
  }
  return blocks;
}

/** The ```yaml blocks whose first line is `# name.yaml`: files the doc asks the reader to save. */
export function namedFiles(text: string): { name: string; text: string }[] {
  return [...text.matchAll(/^```yaml\n# ([\w.-]+\.ya?ml)\n([\s\S]*?)^```$/gm)].map((m) => ({
    name: m[1]!,
    text: `# ${m[1]}\n${m[2]}`,
  }));
}

// Every status goes to $CURL_STATUSES, one a line, for the test to check against the block's.
const CURL = String.raw`
curl() {
  local err rc
  err=$(mktemp)
  command curl "$@" -w '%{stderr}<<http %{http_code}>>\n' 2>"$err"
  rc=$?
  grep -v '^<<http' "$err" >&2 || true
  sed -n 's/^<<http \([0-9]*\)>>$/\1/p' "$err" >> "$CURL_STATUSES"
  if grep -q '^<<http 5' "$err"; then rc=22; echo "curl: a 5xx answer" >&2; fi
  rm -f "$err"
  return $rc
}`;

const t = suite<{
  dir: string;
  work: string;
  server: Proc;
  env: NodeJS.ProcessEnv;
  hooks: http.Server;
  received: number;
}>('docs: every command block');

function admin(env: NodeJS.ProcessEnv, args: string[]): Promise<any> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      [...npmScriptArgs('admin'), ...args],
      { cwd: ROOT, env },
      (err, stdout, stderr) =>
        err ? reject(new Error(stderr || err.message)) : resolve(JSON.parse(stdout)),
    ),
  );
}

t.before(async (ctx) => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-docs-'));
  // A scratch checkout: links to the repository's parts, so `npm run` works and writes land here.
  ctx.work = path.join(ctx.dir, 'work');
  fs.mkdirSync(ctx.work);
  for (const name of fs.readdirSync(ROOT)) {
    if (['.git', 'data'].includes(name)) continue;
    fs.symlinkSync(path.join(ROOT, name), path.join(ctx.work, name));
  }
  for (const f of DOCS)
    for (const file of namedFiles(fs.readFileSync(path.join(ROOT, f), 'utf8')))
      fs.writeFileSync(path.join(ctx.work, file.name), file.text);
  const bin = npxShim(path.join(ctx.dir, 'bin'));
  fs.writeFileSync(path.join(bin, 'uuidgen'), '#!/bin/sh\ncat /proc/sys/kernel/random/uuid\n', {
    mode: 0o755,
  });
  ctx.received = 0;
  ctx.hooks = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      ctx.received++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => ctx.hooks.listen(0, '127.0.0.1', r));
  const hookUrl = `http://127.0.0.1:${(ctx.hooks.address() as net.AddressInfo).port}/school`;
  const base = {
    DATABASE_URL: `sqlite:${path.join(ctx.dir, 'school.db')}`,
    FILES_DIR: path.join(ctx.dir, 'files'),
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
  };
  ctx.server = startProcess('src/main.ts', {
    ...base,
    PORT: '0',
    METRICS_PORT: '0',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    LOG_LEVEL: 'info',
  });
  const demo = await ctx.server.waitFor((j) => j.demo_bootstrap === true);
  const listening = await ctx.server.waitFor((j) => j.msg === 'School Platform API listening');
  const origin = `http://127.0.0.1:${listening.port}`;
  const env = { ...process.env, ...base };
  const sandbox = await admin(env, ['account', 'create', '--name', 'Docs sandbox', '--sandbox']);
  const cred = await admin(env, [
    'credential',
    'create',
    '--account',
    sandbox.id,
    '--permissions',
    '*',
  ]);
  ctx.env = {
    ...env,
    PATH: `${bin}:${process.env.PATH}`,
    PORT: String(listening.port),
    METRICS_PORT: String(listening.metrics_port),
    HOOK_URL: hookUrl,
    SECRET: demo.v3_credential_secret,
    KEY: demo.v3_credential_secret,
    LEGACY_KEY: demo.legacy_api_key,
    API: `${origin}/api/v3`,
    SANDBOX_SECRET: cred.secret,
    TEST_KEY: cred.secret,
    SCHOOL_BASE_URL: origin,
    SCHOOL_CONFIG_DIR: path.join(ctx.dir, 'config'),
    SCHOOL_OPEN_BROWSER: '0',
    SCHOOL_POLL_MS: '200',
  };
});

t.after(async (ctx) => {
  if (ctx.server) await ctx.server.stop();
  ctx.hooks?.closeAllConnections();
  ctx.hooks?.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

/**
 * What is wrong with the statuses a block's curls received: a non-2xx it does not show (expect
 * marker), or one it shows that never came. Undefined when nothing is.
 */
export function problems(statuses: number[], expect: number[]): string | undefined {
  const unexpected = [
    ...new Set(statuses.filter((s) => !(s >= 200 && s < 300) && !expect.includes(s))),
  ];
  const missing = expect.filter((s) => !statuses.includes(s));
  if (unexpected.length)
    return `answered ${unexpected.join(', ')}: a block that shows an error says so (<!-- expect: ${unexpected.join(', ')} why -->)`;
  if (missing.length) return `its expect marker names ${missing.join(', ')}, never answered`;
  return undefined;
}

/** The block's exit code, output and the HTTP statuses its curls received. */
function runBlock(ctx: { dir: string; work: string; env: NodeJS.ProcessEnv }, b: Block) {
  const port = ctx.env.PORT!;
  const statuses = path.join(ctx.dir, 'statuses');
  fs.writeFileSync(statuses, '');
  const code = b.code
    .replaceAll('localhost:3000', `127.0.0.1:${port}`)
    .replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`)
    .replaceAll('localhost:9464', `127.0.0.1:${ctx.env.METRICS_PORT}`);
  const script = ['set -eo pipefail', CURL, code].join('\n');
  return new Promise<{ code: number | null; out: string; statuses: number[] }>((resolve) => {
    const env = { ...ctx.env, CURL_STATUSES: statuses };
    const child = spawn('bash', ['-c', script], { cwd: ctx.work, env, detached: true });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 120_000);
    child.on('close', (exit) => {
      clearTimeout(timer);
      const seen = fs.readFileSync(statuses, 'utf8').split('\n').filter(Boolean).map(Number);
      resolve({ code: exit, out, statuses: seen });
    });
  });
}

t('each block runs and exits 0, or is marked not-run with a reason', async (ctx) => {
  const blocks = DOCS.flatMap((f) => commandBlocks(f, fs.readFileSync(path.join(ROOT, f), 'utf8')));
  const failed: string[] = [];
  const took: [string, number][] = [];
  let ran = 0;
  let shown = 0;
  for (const b of blocks) {
    if (b.notRun !== undefined) continue;
    const started = performance.now();
    const r = await runBlock(ctx, b);
    took.push([`${b.file}:${b.line}`, (performance.now() - started) / 1000]);
    ran++;
    if (r.code !== 0) failed.push(`${b.file}:${b.line}: exit ${r.code}\n${r.out.slice(-3000)}`);
    const wrong = problems(r.statuses, b.expect ?? []);
    if (wrong) failed.push(`${b.file}:${b.line}: ${wrong}\n${r.out.slice(-3000)}`);
    if (b.expect) shown += b.expect.length;
  }
  const notRun = blocks.filter((b) => b.notRun !== undefined);
  console.log(
    `  (${ran} command blocks run, ${notRun.length} marked not-run, ${shown} error statuses shown; slowest:`,
  );
  for (const [where, s] of took.sort((a, b) => b[1] - a[1]).slice(0, 5))
    console.log(`    ${s.toFixed(1).padStart(5)} s  ${where}`);
  console.log('  )');
  assert.equal(failed, []);
  assert.ok(ran >= 22, `only ${ran} blocks ran`);
  assert.ok(shown >= 1, 'the 422 of a cancel on a finished operation (docs/operations.md)');
  assert.ok(ctx.received >= 1, 'the webhook example reached its receiver');
  for (const b of notRun) assert.ok(b.notRun!.length > 5, `${b.file}:${b.line}: say why`);
});

t('markers: only right before a fence', () => {
  assert.throws(
    () => commandBlocks('x.md', 'text\n<!-- not-run: a browser -->\ntext\n```sh\nls\n```\n'),
    /x\.md:2: a marker \(not-run\) must be right before a fence/,
  );
  const [b] = commandBlocks(
    'x.md',
    '<!-- not-run: a browser -->\n```sh\nls\n```\n```json\n{}\n```',
  );
  assert.equal(b, { file: 'x.md', line: 2, lang: 'sh', code: 'ls', notRun: 'a browser' });
  assert.throws(
    () => commandBlocks('x.md', '<!-- expect: 409 taken -->\ntext\n```sh\nls\n```'),
    /x\.md:1: a marker \(expect\) must be right before a fence/,
  );
  const [shows] = commandBlocks(
    'x.md',
    '<!-- expect: 404, 409 gone and taken -->\n\n```sh\nls\n```',
  );
  assert.equal(shows, { file: 'x.md', line: 3, lang: 'sh', code: 'ls', expect: [404, 409] });
  assert.throws(
    () => commandBlocks('x.md', '<!-- expect: 409 -->\n```sh\nls\n```'),
    /x\.md:1: write <!-- not-run: why --> or <!-- expect: 409 why -->/,
  );
  // The statuses a block's curls received, against what it shows.
  assert.is(problems([200, 201, 204], []), undefined);
  assert.match(problems([200, 404], [])!, /^answered 404: a block that shows an error says so/);
  assert.match(problems([302], [])!, /^answered 302/);
  assert.is(problems([202, 409, 409], [409]), undefined);
  assert.match(problems([202, 404, 409], [409])!, /^answered 404/);
  assert.is(problems([202], [409]), 'its expect marker names 409, never answered');
  assert.equal(namedFiles('```yaml\n# school.yaml\nversion: 1\n```\n```yaml\nversion: 2\n```\n'), [
    { name: 'school.yaml', text: '# school.yaml\nversion: 1\n' },
  ]);
});

t.run();
