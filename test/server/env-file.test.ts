// engine: any
// `.env` files (node --env-file semantics: the environment wins) and LOG_FORMAT, through the real
// `npm start` process.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../src/config.ts';
import { loadEnvFile } from '../../src/env-file.ts';
import { startProcess } from './processes.ts';

const t = suite('.env and LOG_FORMAT');

t('.env in the working folder is read; a variable already set wins', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-env-'));
  try {
    fs.writeFileSync(
      path.join(dir, '.env'),
      'SCHOOL_ENV_A=from-file\nSCHOOL_ENV_B="quoted # not a comment"\n',
    );
    process.env.SCHOOL_ENV_A = 'from-env';
    const env = { ...process.env };
    assert.is(loadEnvFile(env, dir), path.join(dir, '.env'));
    assert.is(process.env.SCHOOL_ENV_A, 'from-env');
    assert.is(process.env.SCHOOL_ENV_B, 'quoted # not a comment');
    assert.is(
      loadEnvFile({}, fs.mkdtempSync(path.join(os.tmpdir(), 'school-env-none-'))),
      undefined,
    );
    assert.throws(
      () => loadEnvFile({ ENV_FILE: 'missing.env' }, dir),
      (err: Error) =>
        err.message === `ENV_FILE: cannot read ${path.join(dir, 'missing.env')}: no such file`,
    );
  } finally {
    delete process.env.SCHOOL_ENV_A;
    delete process.env.SCHOOL_ENV_B;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

t('LOG_FORMAT: json and pretty chosen, auto follows the terminal, anything else is refused', () => {
  assert.is(loadConfig({ LOG_FORMAT: 'json' }).logFormat, 'json');
  assert.is(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty');
  assert.is(loadConfig({}).logFormat, process.stdout.isTTY ? 'pretty' : 'json');
  assert.throws(
    () => loadConfig({ LOG_FORMAT: 'xml' }),
    /LOG_FORMAT: 'xml' is not one of auto, json, pretty/,
  );
});

t('npm start reads ENV_FILE (PORT and LOG_FORMAT from the file)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-env-start-'));
  const file = path.join(dir, 'local.env');
  fs.writeFileSync(file, `LOG_FORMAT=pretty\nDATABASE_URL=sqlite:${path.join(dir, 'school.db')}\n`);
  const p = startProcess('src/main.ts', { ENV_FILE: file, PORT: '0' });
  try {
    // Pretty lines are not JSON: wait for the listening line as text.
    for (let i = 0; i < 1200 && !p.lines.some((l) => /API listening/.test(l.raw)); i++) {
      if (p.proc.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.not.ok(
      p.lines.some((l) => l.json?.msg),
      'no JSON log line',
    );
    assert.ok(fs.existsSync(path.join(dir, 'school.db')), 'the database named in the file');
    assert.ok(p.lines.some((l) => /INFO.*School Platform API listening/.test(l.raw)));
  } finally {
    p.proc.kill('SIGTERM');
    await p.exited;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

t.run();
