// engine: any
// `npx school` (the package's bin, no npm banner) and `school completion bash|zsh`.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { COMMANDS } from '../../src/cli/school/completion.ts';
import { main } from '../../src/cli/school/main.ts';

const root = path.resolve(import.meta.dirname, '../..');
const t = suite('school bin and completion');

async function run(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env: {} });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** What bash offers after `words` (the last one being completed). */
function complete(script: string, words: string[]): string[] {
  const program = `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _school; printf '%s\\n' "\${COMPREPLY[@]}"`;
  return execFileSync('bash', ['-c', program], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
}

t('bash completion: commands, their actions, options, files', async () => {
  const { code, out } = await run(['completion', 'bash']);
  assert.is(code, 0);
  assert.equal(complete(out, ['school', 'ex']), ['exports']);
  assert.equal(complete(out, ['school', 'exports', '']), ['create', 'download']);
  assert.equal(complete(out, ['school', 'imports', 'run', '--dry']), ['--dry-run']);
  assert.equal(complete(out, ['school', 'files', 'upload', 'package.js']), ['package.json']);
  const zsh = await run(['completion', 'zsh']);
  assert.match(zsh.out, /bashcompinit/);
  const fish = await run(['completion', 'fish']);
  assert.is(fish.code, 2);
});

t('every command completion offers is one the CLI knows', async () => {
  for (const command of Object.keys(COMMANDS)) {
    if (command === 'login' || command === 'logout' || command === 'whoami') continue;
    const res = await run([command]);
    assert.not.match(res.err, /Unknown command/, command);
  }
});

// The real npx, once (the docs' tests run `npx school` straight to this bin: helpers/doc-blocks.ts).
t('npx school: the bin runs the CLI, nothing printed by npm', () => {
  const res = spawnSync('npx', ['school', '--help'], {
    cwd: root,
    encoding: 'utf8',
    // npm's "new version available" notice depends on the registry, not on this package.
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  assert.is(res.status, 0, res.stderr);
  assert.match(res.stdout, /^Usage: npx school <command>/);
  assert.is(res.stderr, '');
});

t.run();
