// engine: any
// Every entry point (src/node-version.mjs, loaded first) turns on Node's compile cache, so a second
// start reuses the stripped and compiled modules: in the system's temporary folder by default.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = path.resolve(import.meta.dirname, '../..');

const t = suite('compile cache');

t('an entry point fills node-compile-cache under TMPDIR, without NODE_COMPILE_CACHE', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'school-cache-'));
  const { NODE_COMPILE_CACHE: _, NODE_DISABLE_COMPILE_CACHE: __, ...env } = process.env;
  try {
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--import', './src/node-version.mjs', 'src/cli/args.ts'],
        { cwd: ROOT, env: { ...env, TMPDIR: tmp } },
        (err, stdout, stderr) => (err ? reject(err) : resolve(stdout + stderr)),
      ),
    );
    assert.is(out, ''); // nothing printed on the way
    const dir = path.join(tmp, 'node-compile-cache');
    const entries = fs.readdirSync(dir, { recursive: true, withFileTypes: true });
    assert.ok(entries.filter((e) => e.isFile()).length >= 2, 'node-version.mjs and args.ts cached');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

t.run();
