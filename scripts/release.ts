// Usage: npm run release -- <version> [--root DIR] [--date YYYY-MM-DD] [--dry-run]
// Publishes the working contract (spec/openapi.yaml) as release <version>: checks the version
// against the changes since the newest published release (a breaking change within v3 is refused
// outright; an added operation, field or enum value needs a minor; text only, a patch; nothing
// changed, nothing to release), then sets info.version, regenerates generated/, writes
// spec/releases/<version>.yaml and adds the release's entries to spec/CHANGELOG.md.
// Exit codes: 0 = released, 1 = refused, 2 = usage or IO error.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { isScalar, parseDocument } from 'yaml';
import {
  REPO_ROOT,
  contractPaths,
  loadContract,
  loadWorkingContract,
  releases,
} from '../src/contract/files.ts';
import { eventsDir, withEventWebhooksText } from '../src/contract/events.ts';
import {
  prependSection,
  refuseVersion,
  releaseNotes,
  renderSection,
} from '../src/contract/release.ts';

const USAGE = 'usage: npm run release -- <version> [--root DIR] [--date YYYY-MM-DD] [--dry-run]';
const CALLER_DIR = process.env.INIT_CWD ?? process.cwd();
const CHANGELOG_INTRO = `# Changelog of the v3 contract

Every published release of \`spec/openapi.yaml\`, newest first. Entries name the operation
(operationId, method and path) and the schema path of each change.
`;

class Usage extends Error {}

/** The contract text with its `info.version` set; the rest of the file stays byte for byte. */
function withVersion(text: string, version: string): string {
  const node = parseDocument(text).getIn(['info', 'version'], true);
  if (!isScalar(node) || !node.range) throw new Error('spec/openapi.yaml has no info.version');
  const [start, end] = node.range;
  return text.slice(0, start) + version + text.slice(end);
}

function regenerate(root: string): void {
  const script = path.join(REPO_ROOT, 'scripts/generate.ts');
  const run = spawnSync(process.execPath, [script, '--root', root], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`npm run generate failed:\n${run.stderr || run.stdout}`);
}

/**
 * The packages that carry the contract's version: the server's package.json and lock, and the
 * typed client's package (packages/client). Those absent from the tree are skipped.
 */
function bumpPackages(root: string, version: string): string[] {
  const written: string[] = [];
  for (const file of ['package.json', 'package-lock.json', 'packages/client/package.json']) {
    const full = path.join(root, file);
    if (!fs.existsSync(full)) continue;
    const json = JSON.parse(fs.readFileSync(full, 'utf8'));
    json.version = version;
    if (json.packages?.['']) json.packages[''].version = version; // the lock's own entry
    fs.writeFileSync(full, JSON.stringify(json, null, 2) + '\n');
    written.push(file);
  }
  return written;
}

function main(argv: string[]): number {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        root: { type: 'string' },
        date: { type: 'string' },
        'dry-run': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new Usage((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 1) throw new Usage('give exactly one version');
  const version = positionals[0]!;
  const date = values.date ?? new Date().toISOString().slice(0, 10);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Usage(`--date ${date} is not YYYY-MM-DD`);
  const root = values.root ? path.resolve(CALLER_DIR, values.root) : REPO_ROOT;
  const files = contractPaths(root);

  const previous = releases(root)[0];
  if (!previous) throw new Error(`no published release in ${files.releases}`);
  // The working contract with its event catalog (spec/events), as the snapshot will hold it.
  const notes = releaseNotes(loadContract(files.release(previous)), loadWorkingContract(root));
  const refusal = refuseVersion(previous, version, notes.level);
  if (refusal) {
    console.error(`release: refused: ${refusal}`);
    const breaking = notes.entries.filter((e) => e.section === 'Breaking');
    for (const e of breaking) console.error(`  - ${e.text}`);
    return 1;
  }
  const section = renderSection(version, date, notes.entries);
  console.log(`Release ${version} (${notes.level}, after ${previous}):\n\n${section}`);
  if (values['dry-run']) return 0;

  const original = fs.readFileSync(files.spec, 'utf8');
  const released = withVersion(original, version);
  fs.writeFileSync(files.spec, released);
  try {
    regenerate(root);
  } catch (err) {
    fs.writeFileSync(files.spec, original); // nothing published: leave the tree as it was
    throw err;
  }
  fs.writeFileSync(files.release(version), withEventWebhooksText(released, eventsDir(root)));
  const changelog = fs.existsSync(files.changelog)
    ? fs.readFileSync(files.changelog, 'utf8')
    : CHANGELOG_INTRO;
  fs.writeFileSync(files.changelog, prependSection(changelog, section));
  const bumped = bumpPackages(root, version);
  console.log(
    `Wrote ${path.relative(root, files.release(version))}, spec/openapi.yaml (info.version), ` +
      `generated/ and spec/CHANGELOG.md${bumped.length ? `; version ${version} in ${bumped.join(', ')}` : ''}.`,
  );
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (err) {
  console.error(`release: ${(err as Error).message}${err instanceof Usage ? `\n${USAGE}` : ''}`);
  process.exitCode = 2;
}
