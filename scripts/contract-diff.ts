// Usage: npm run contract:diff -- [--format text|markdown] <old.yaml> [new.yaml]
//        npm run contract:diff -- [--format text|markdown] --latest [new.yaml] [--root DIR]
// Lists every contract change as BREAKING or compatible (text), or as the changelog entries a
// release would get (markdown). `--latest` compares against the newest published release in
// spec/releases/. Exit codes: 0 = fine, 1 = breaking change within the same major version,
// 2 = usage, IO or parse error.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { diffContracts, type DiffResult } from '../src/contract/diff.ts';
import {
  REPO_ROOT,
  contractPaths,
  loadContract,
  loadWorkingContract,
  releases,
} from '../src/contract/files.ts';
import { releaseNotes, renderEntries } from '../src/contract/release.ts';

const USAGE = `usage: npm run contract:diff -- [--format text|markdown] <old.yaml> [new.yaml]
       npm run contract:diff -- [--format text|markdown] --latest [new.yaml] [--root DIR]
(new defaults to spec/openapi.yaml; --latest compares with the newest file in spec/releases/)`;
// `npm run` switches to the package root; resolve user paths against where it was invoked.
const CALLER_DIR = process.env.INIT_CWD ?? process.cwd();

function fail(message: string): never {
  console.error(`contract:diff: ${message}`);
  process.exit(2);
}

function load(path: string): Record<string, unknown> {
  try {
    return loadContract(path);
  } catch (err) {
    fail((err as Error).message);
  }
}

function loadWorking(root: string): Record<string, unknown> {
  try {
    return loadWorkingContract(root);
  } catch (err) {
    fail((err as Error).message);
  }
}

function printText(result: DiffResult): void {
  const { changes } = result;
  if (!changes.length) return void console.log('no changes');
  for (const c of changes) {
    console.log(`${c.kind === 'breaking' ? 'BREAKING' : 'compatible'}  ${c.where}: ${c.what}`);
  }
  const count = changes.filter((c) => c.kind === 'breaking').length;
  const total = `${changes.length} change${changes.length === 1 ? '' : 's'}`;
  console.log(`${total}: ${count} breaking, ${changes.length - count} compatible`);
}

function main(argv: string[]): number {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        format: { type: 'string', default: 'text' },
        latest: { type: 'boolean' },
        root: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    fail(`${(err as Error).message}\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const format = values.format;
  if (format !== 'text' && format !== 'markdown') fail(`unknown --format ${format}\n${USAGE}`);
  const root = values.root ? resolve(CALLER_DIR, values.root) : REPO_ROOT;
  const files = positionals.map((p) => resolve(CALLER_DIR, p));
  if (values.latest) {
    const newest = releases(root)[0];
    if (!newest) fail(`no published release in ${contractPaths(root).releases}`);
    files.unshift(contractPaths(root).release(newest));
  }
  if (files.length < 1 || files.length > 2) fail(USAGE);
  // The working contract comes with its event catalog (spec/events) as `webhooks`.
  const newDoc = files[1] ? load(files[1]) : loadWorking(root);
  const oldDoc = load(files[0]!);

  let result: DiffResult;
  try {
    result = diffContracts(oldDoc, newDoc);
    if (format === 'markdown') {
      const { entries } = releaseNotes(oldDoc, newDoc);
      console.log(entries.length ? renderEntries(entries) : 'No changes.');
    } else printText(result);
  } catch (err) {
    fail((err as Error).message);
  }
  const { breaking, sameMajor } = result;
  if (breaking && !sameMajor) console.log('major version changed: breaking changes are allowed');
  if (breaking && sameMajor) console.error('breaking changes within the same major version');
  return breaking && sameMajor ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
