// Running the documentation's command blocks as written: the ```sh blocks of a section of a
// Markdown file, and bash in its own process group (so a server a block starts goes with it).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import * as assert from 'uvu/assert';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** The ```sh (or other lang) blocks of `## section` of a Markdown file of the repository. */
export function blocks(file: string, section: string, lang = 'sh'): string[] {
  const doc = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const start = doc.indexOf(`\n## ${section}\n`);
  assert.ok(start >= 0, `${file} has a "## ${section}" section`);
  const end = doc.indexOf('\n## ', start + 1);
  const text = doc.slice(start, end < 0 ? undefined : end);
  return [...text.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
}

/**
 * Writes into `dir` an `npx` that runs `npx school ...` as npm would, the package's bin
 * (`node bin/school.mjs`), and hands any other npx call to the real one; put `dir` first on a
 * block's PATH. npm resolving the package's own bin costs 1.5-2.5 s of CPU per call (it reads the
 * whole node_modules tree) against 0.2 s for the CLI itself, and the docs call it a dozen times.
 * That the real `npx school` runs the same bin, with nothing printed by npm, is shown once, by
 * test/cli/school-completion.test.ts.
 */
export function npxShim(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const bin = JSON.stringify(path.join(ROOT, 'bin/school.mjs'));
  const script = [
    '#!/bin/sh',
    `if [ "$1" = school ]; then shift; exec ${JSON.stringify(process.execPath)} ${bin} "$@"; fi`,
    `PATH=$(printf %s "$PATH" | sed "s|^${dir}:||") exec npx "$@"`,
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'npx'), script, { mode: 0o755 });
  return dir;
}

export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Runs a bash script from the repository's root; whatever it started is ended afterwards. */
export async function runBash(
  script: string,
  env: Record<string, string>,
  timeoutMs = 120_000,
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn('bash', ['-c', script], {
    cwd: ROOT,
    detached: true, // its own process group: the server it starts goes with it
    env: { ...process.env, ...env },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((r) => child.on('close', r));
  clearTimeout(timer);
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {
    /* already gone */
  }
  return { code, out, err };
}

/** The lines of the output that are JSON answers, parsed. */
export const jsonLines = (out: string): any[] =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
