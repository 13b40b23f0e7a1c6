// engine: any
// `npm run release -- <version>` and `npm run contract:diff -- --format markdown`, run as
// processes on copies of a spec/ tree in a temporary folder (never on the repository's own).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML, { stringify } from 'yaml';
import { REPO_ROOT, releases } from '../../src/contract/files.ts';
import { releaseNotes } from '../../src/contract/release.ts';

type Obj = Record<string, any>;

const user = (extra: Obj = {}) => ({
  type: 'object',
  description: 'A student.',
  properties: { id: { type: 'string' }, ...extra },
});

function contract(version: string, { userExtra = {}, ops = {}, describe = 'List users' } = {}) {
  const json = (schema: Obj) => ({ 'application/json': { schema } });
  return {
    openapi: '3.1.0',
    info: { title: 'fixture', version },
    paths: {
      '/users': {
        get: {
          operationId: 'listUsers',
          summary: describe,
          'x-permissions': ['users.read'],
          responses: {
            '200': { description: 'ok', content: json({ $ref: '#/components/schemas/User' }) },
          },
        },
      },
      ...ops,
    },
    components: { schemas: { User: user(userExtra) } },
  };
}

const listTags = {
  '/tags': {
    get: {
      operationId: 'listTags',
      responses: {
        '200': {
          description: 'ok',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
      },
    },
  },
};

const roots: string[] = [];
test.after(() => roots.forEach((r) => fs.rmSync(r, { recursive: true, force: true })));

/** A spec/ tree with published releases and a working contract, in a fresh folder. */
function tree(published: Record<string, Obj>, working: Obj, changelog?: string): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'school-release-'));
  roots.push(root);
  fs.mkdirSync(path.join(root, 'spec/releases'), { recursive: true });
  for (const [v, doc] of Object.entries(published)) {
    fs.writeFileSync(path.join(root, `spec/releases/${v}.yaml`), stringify(doc));
  }
  fs.writeFileSync(path.join(root, 'spec/openapi.yaml'), stringify(working));
  if (changelog) fs.writeFileSync(path.join(root, 'spec/CHANGELOG.md'), changelog);
  return root;
}

function run(script: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [`scripts/${script}.ts`, ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
const release = (root: string, version: string) =>
  run('release', version, '--root', root, '--date', '2026-11-23');
const read = (root: string, file: string) => fs.readFileSync(path.join(root, file), 'utf8');
/** Everything a release may write: the tree's files, the contract and the changelog. */
const snapshot = (root: string) =>
  JSON.stringify([
    fs.readdirSync(root),
    fs.readdirSync(path.join(root, 'spec/releases')),
    read(root, 'spec/openapi.yaml'),
    fs.existsSync(path.join(root, 'spec/CHANGELOG.md')) && read(root, 'spec/CHANGELOG.md'),
  ]);

test('a new operation and field: needs 3.4.0; the release writes snapshot, version, generated/ and changelog', () => {
  const old = contract('3.3.2');
  const root = tree(
    { '3.3.2': old },
    contract('3.3.2', { userExtra: { nickname: { type: 'string' } }, ops: listTags }),
    '# Changelog\n\nIntro.\n\n## 3.3.2 (2026-11-22)\n\n### Documentation\n\n- Tags split.\n',
  );
  const before = snapshot(root);
  for (const [version, reason] of [
    ['3.3.3', /add or change the contract: that needs a minor release \(3\.4\.0\), not 3\.3\.3/],
    ['3.5.0', /3\.5\.0 does not follow 3\.3\.2: the next release is 3\.3\.3 \(patch\) or 3\.4\.0/],
    ['4.0.0', /4\.0\.0 leaves v3/],
    ['3.4', /3\.4 is not a MAJOR\.MINOR\.PATCH version/],
  ] as const) {
    const r = release(root, version);
    assert.is(r.code, 1, version);
    assert.match(r.err, reason);
  }
  assert.is(snapshot(root), before, 'a refused release changes nothing');
  const dry = run('release', '3.4.0', '--root', root, '--date', '2026-11-23', '--dry-run');
  assert.is(dry.code, 0, dry.err);
  assert.match(
    dry.out,
    /^Release 3\.4\.0 \(minor, after 3\.3\.2\):\n\n## 3\.4\.0 \(2026-11-23\)\n/,
  );
  assert.is(snapshot(root), before, 'a dry run writes nothing');

  fs.writeFileSync(path.join(root, 'package.json'), '{\n  "name": "x",\n  "version": "3.3.2"\n}\n');
  fs.mkdirSync(path.join(root, 'packages/client'), { recursive: true });
  fs.writeFileSync(path.join(root, 'packages/client/package.json'), '{ "version": "3.3.2" }');
  const r = release(root, '3.4.0');
  assert.is(r.code, 0, r.err);
  assert.is(read(root, 'package.json'), '{\n  "name": "x",\n  "version": "3.4.0"\n}\n');
  assert.is(JSON.parse(read(root, 'packages/client/package.json')).version, '3.4.0');
  assert.match(r.out, /version 3\.4\.0 in package\.json, packages\/client\/package\.json\.$/m);
  const spec = read(root, 'spec/openapi.yaml');
  assert.match(spec, /^ {2}version: 3\.4\.0$/m);
  assert.is(read(root, 'spec/releases/3.4.0.yaml'), spec);
  assert.match(read(root, 'generated/operations.ts'), /export const release = '3\.4\.0';/);
  assert.match(
    read(root, 'generated/operations.ts'),
    /listTags: \{ method: 'GET', path: '\/tags' \}/,
  );
  assert.match(read(root, 'generated/types.ts'), /nickname\?: string;/);
  const section = [
    '## 3.4.0 (2026-11-23)',
    '',
    '### Added',
    '',
    '- `listUsers` (GET /users) response 200 `nickname`: new response field',
    '- `listTags` (GET /tags): new operation',
    '',
  ].join('\n');
  assert.is(
    read(root, 'spec/CHANGELOG.md'),
    `# Changelog\n\nIntro.\n\n${section}\n## 3.3.2 (2026-11-22)\n\n### Documentation\n\n- Tags split.\n`,
  );

  // contract:diff prints the same entries; after the release nothing is left to list.
  const md = run(
    'contract-diff',
    '--format',
    'markdown',
    path.join(root, 'spec/releases/3.3.2.yaml'),
    path.join(root, 'spec/releases/3.4.0.yaml'),
  );
  assert.is(md.code, 0);
  assert.is(md.out, section.split('\n').slice(2).join('\n'));
  const latest = run('contract-diff', '--format', 'markdown', '--latest', '--root', root);
  assert.is(latest.out, 'No changes.\n');
  assert.is(
    release(root, '3.4.1').err,
    'release: refused: nothing changed since 3.4.0: there is nothing to release\n',
  );
});

test('text only: a patch, listed as documentation; the newest release is found by version order', () => {
  const root = tree(
    { '3.9.0': contract('3.9.0'), '3.10.0': contract('3.10.0') },
    contract('3.10.0', { describe: 'List the students' }),
  );
  assert.match(release(root, '3.9.1').err, /does not follow 3\.10\.0/);
  const r = release(root, '3.10.1');
  assert.is(r.code, 0, r.err);
  assert.equal(releases(root), ['3.10.1', '3.10.0', '3.9.0']);
  const changelog = read(root, 'spec/CHANGELOG.md');
  assert.match(changelog, /^# Changelog of the v3 contract\n/);
  assert.ok(
    changelog.endsWith(
      '## 3.10.1 (2026-11-23)\n\n### Documentation\n\n- `listUsers` (GET /users): descriptions or examples\n',
    ),
    changelog,
  );
});

test('a breaking change within v3 is refused outright, naming it', () => {
  const root = tree(
    { '3.3.2': contract('3.3.2', { userExtra: { email: { type: 'string' } } }) },
    contract('3.3.2'),
  );
  const before = snapshot(root);
  for (const version of ['3.3.3', '3.4.0']) {
    const r = release(root, version);
    assert.is(r.code, 1);
    assert.is(
      r.err,
      'release: refused: breaking changes since 3.3.2: they never ship within v3 (v4 gets its own OpenAPI document)\n' +
        '  - `listUsers` (GET /users) response 200 `email`: response field removed\n',
    );
  }
  assert.is(snapshot(root), before);
  const diff = run('contract-diff', '--format', 'markdown', '--latest', '--root', root);
  assert.is(diff.code, 1);
  assert.is(
    diff.out,
    '### Breaking\n\n- `listUsers` (GET /users) response 200 `email`: response field removed\n',
  );
});

test('levels: permissions are a change, a field named "description" is a field, examples are text', () => {
  const level = (b: Obj) => releaseNotes(contract('3.3.2'), b);
  const perms: Obj = contract('3.3.2');
  perms.paths['/users'].get['x-permissions'] = ['users.read', 'tags.read'];
  assert.equal(level(perms), {
    level: 'minor',
    entries: [{ section: 'Changed', text: '`listUsers` (GET /users): definition changed' }],
  });
  assert.is(
    level(contract('3.3.2', { userExtra: { description: { type: 'string' } } })).level,
    'minor',
  );
  const examples: Obj = contract('3.3.2');
  examples.components.schemas.User.examples = [{ id: '1' }];
  assert.equal(level(examples), {
    level: 'patch',
    entries: [{ section: 'Documentation', text: 'schema `User`: descriptions or examples' }],
  });
  assert.equal(level(contract('3.3.2')), { level: 'none', entries: [] });
});

test('the event catalog (webhooks): a new version is added, a reworded one documentation', () => {
  const event = (description: string) => ({
    post: {
      description,
      requestBody: {
        content: {
          'application/json': {
            schema: { type: 'object', properties: { id: { type: 'string' } } },
          },
        },
      },
      responses: { '200': { description: 'ok' } },
    },
  });
  const before: Obj = { ...contract('3.3.2'), webhooks: { 'user.created.v1': event('A user.') } };
  const added = {
    ...before,
    webhooks: { ...before.webhooks, 'user.created.v2': event('A user.') },
  };
  const notes = releaseNotes(before, added);
  assert.is(notes.level, 'minor');
  assert.equal(
    notes.entries.map((e) => [e.section, e.text.split(':')[0]]),
    [['Added', 'event `user.created.v2`']],
  );
  const reworded = { ...before, webhooks: { 'user.created.v1': event('A student.') } };
  assert.equal(releaseNotes(before, reworded), {
    level: 'patch',
    entries: [
      { section: 'Documentation', text: 'event `user.created.v1`: descriptions or examples' },
    ],
  });
});

test('the repository: the changelog starts at the newest release, and CI diffs against it', () => {
  const newest = releases(REPO_ROOT)[0]!;
  const changelog = read(REPO_ROOT, 'spec/CHANGELOG.md');
  assert.is(/^## (\S+) /m.exec(changelog)?.[1], newest);
  assert.match(read(REPO_ROOT, '.ci/run'), /^npm run contract:diff -- --latest$/m);
});

test("the changelog lists only what our releases hold; the specification's history is marked", () => {
  const changelog = read(REPO_ROOT, 'spec/CHANGELOG.md');
  const sections = changelog.split(/^(?=## )/m).slice(1);
  const ours = sections.filter((s) => /^## \d+\.\d+\.\d+ \(/.test(s));
  // Every release section is a published snapshot, and every snapshot has its section.
  const versions = ours.map((s) => /^## (\S+)/.exec(s)![1]!);
  assert.equal(versions, releases(REPO_ROOT));
  for (const section of ours) {
    const version = /^## (\S+)/.exec(section)![1]!;
    const snapshot = YAML.parse(read(REPO_ROOT, `spec/releases/${version}.yaml`));
    const ids = new Set<string>();
    for (const item of Object.values<any>(snapshot.paths))
      for (const op of Object.values<any>(item)) if (op?.operationId) ids.add(op.operationId);
    for (const [, id] of section.matchAll(/^- `(\w+)` \(/gm))
      assert.ok(ids.has(id!), `${version} lists ${id}, which its contract does not hold`);
  }
  // The first release lists every operation it holds.
  const first = ours[ours.length - 1]!;
  const firstIds = [...first.matchAll(/^- `(\w+)` \(.*new operation$/gm)].map((m) => m[1]);
  const snapshot = YAML.parse(read(REPO_ROOT, `spec/releases/${versions.at(-1)}.yaml`));
  const held = Object.values<any>(snapshot.paths).flatMap((item) =>
    Object.values<any>(item).flatMap((op) => (op?.operationId ? [op.operationId] : [])),
  );
  assert.equal(firstIds.sort(), held.sort());
  // Anything else is the specification's history, under a heading that says so.
  const others = sections.filter((s) => !ours.includes(s));
  assert.equal(
    others.map((s) => s.split('\n')[0]),
    ["## The specification's release history (not releases of this contract)"],
  );
});

test("README's first paragraph names only resources the contract has", () => {
  const readme = read(REPO_ROOT, 'README.md');
  const first = readme.split('\n\n')[1]!;
  const spec = YAML.parse(read(REPO_ROOT, 'spec/openapi.yaml'));
  const paths = Object.keys(spec.paths);
  for (const word of ['imports', 'exports', 'uploads', 'settings', 'showcases', 'banners']) {
    if (!new RegExp(`\\b${word}\\b`).test(first)) continue;
    assert.ok(
      paths.some((p) => p.split('/').includes(word)),
      `README advertises ${word}; the contract has no /${word}`,
    );
  }
});

test.run();
