// What `npm start`, `npm run worker`, `npm run admin`... run, read from package.json, so that tests
// spawn exactly that command line (Node's own type stripping, no tsx) without npm in between: a
// signal sent to the child then reaches the server itself, as it does under a process manager.
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
const scripts: Record<string, string> = JSON.parse(
  fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'),
).scripts;

/** The arguments after `node` of the package.json script `name` (which must be `node ...`). */
export function npmScriptArgs(name: string): string[] {
  const command = scripts[name];
  const match = command ? /^node ([^&|;<>]+)$/.exec(command) : null;
  if (!match)
    throw new Error(`package.json script "${name}" is not a plain \`node ...\`: ${command}`);
  return match[1]!.trim().split(/\s+/);
}
