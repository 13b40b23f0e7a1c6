// The V8 flags that `npm start` and `npm run worker` give node (package.json's scripts, the one
// place they are written), for the bench children that stand for a server or a worker: a child
// must size its heap as the process it measures does (spec/DECISIONS.md, "V8's heap sizing").
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');

/** The `--name=value` V8 flags of one of package.json's scripts (not `--import` and its file). */
export function scriptNodeFlags(script: 'start' | 'worker'): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const words = String(pkg.scripts[script]).split(/\s+/);
  if (words[0] !== 'node') throw new Error(`package.json's ${script} does not start with node`);
  return words.filter((w) => /^--[a-z-]+=/.test(w) && !w.startsWith('--import='));
}
