// Usage: npm run contract:diff -- <old.yaml> [new.yaml]
// Lists every contract change as BREAKING or compatible. Exit codes: 0 = fine, 1 = breaking
// change within the same major version, 2 = usage, IO or parse error.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { diffContracts } from '../src/contract/diff.ts';

const USAGE =
  'usage: npm run contract:diff -- <old.yaml> [new.yaml]  (new defaults to spec/openapi.yaml)';
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// `npm run` switches to the package root; resolve user paths against where it was invoked.
const CALLER_DIR = process.env.INIT_CWD ?? process.cwd();

function fail(message: string): never {
  console.error(`contract:diff: ${message}`);
  process.exit(2);
}

function load(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    fail(`cannot read ${path}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    fail(`cannot parse ${path}: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || !('openapi' in doc)) {
    fail(`${path} is not an OpenAPI document (no top-level "openapi" field)`);
  }
  return doc;
}

function main(args: string[]): number {
  if (args.includes('-h') || args.includes('--help')) {
    console.log(USAGE);
    return 0;
  }
  if (args.length < 1 || args.length > 2 || args.some((a) => a.startsWith('-'))) fail(USAGE);
  const oldPath = resolve(CALLER_DIR, args[0]!);
  const newPath = args[1] ? resolve(CALLER_DIR, args[1]) : resolve(ROOT, 'spec/openapi.yaml');
  const [oldDoc, newDoc] = [load(oldPath), load(newPath)];

  let result;
  try {
    result = diffContracts(oldDoc, newDoc);
  } catch (err) {
    fail((err as Error).message);
  }
  const { changes, breaking, sameMajor } = result;
  if (!changes.length) {
    console.log('no changes');
    return 0;
  }
  for (const c of changes) {
    console.log(`${c.kind === 'breaking' ? 'BREAKING' : 'compatible'}  ${c.where}: ${c.what}`);
  }
  const count = changes.filter((c) => c.kind === 'breaking').length;
  const total = `${changes.length} change${changes.length === 1 ? '' : 's'}`;
  console.log(`${total}: ${count} breaking, ${changes.length - count} compatible`);
  if (breaking && !sameMajor) console.log('major version changed: breaking changes are allowed');
  if (breaking && sameMajor) console.error('breaking changes within the same major version');
  return breaking && sameMajor ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
