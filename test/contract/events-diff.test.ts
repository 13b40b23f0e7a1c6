// engine: any
// Published event schemas in the contract: the catalog (spec/events) becomes the document's
// `webhooks` section, release snapshots carry it, and `contract:diff` treats any change to a
// published type and version as breaking (a new version is how a shape changes).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { diffContracts } from '../../src/contract/diff.ts';
import { eventWebhooks, withEventWebhooksText } from '../../src/contract/events.ts';
import { loadWorkingContract } from '../../src/contract/files.ts';
import { readEventCatalog, type EventTypeEntry } from '../../src/domain/events/catalog.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

function entry(version: string, properties: object, extra: object = {}): EventTypeEntry {
  const schema = {
    description: 'A tag was given.',
    'x-event-type': 'tag.assigned',
    'x-event-version': version,
    'x-visibility': 'public',
    type: 'object',
    additionalProperties: false,
    required: Object.keys(properties),
    properties,
    ...extra,
  };
  return {
    type: 'tag.assigned',
    version,
    visibility: schema['x-visibility'] as 'public' | 'internal',
    description: 'A tag was given.',
    payloadKeys: Object.keys(properties),
    schema,
  };
}

const doc = (...entries: EventTypeEntry[]) => ({
  openapi: '3.1.0',
  info: { title: 't', version: '3.0.0' },
  paths: {},
  webhooks: eventWebhooks(entries),
});
const changes = (a: object, b: object) =>
  diffContracts(a, b).changes.map((c) => `${c.kind} ${c.where}: ${c.what}`);

const v1 = entry('1', { user_id: { type: 'string' }, tag: { type: 'string', maxLength: 100 } });

test('the same catalog, or only its descriptions changed: no change', () => {
  assert.equal(changes(doc(v1), doc(v1)), []);
  const reworded = entry('1', v1.schema.properties as object, { description: 'Reworded.' });
  assert.equal(changes(doc(v1), doc(reworded)), []);
});

test('any change to a published version is breaking, even an added field', () => {
  const props = v1.schema.properties as Record<string, unknown>;
  const added = entry('1', { ...props, at: { type: 'string' } });
  const removed = entry('1', { user_id: props.user_id });
  const retyped = entry('1', { ...props, user_id: { type: 'integer' } });
  const limit = entry('1', { ...props, tag: { type: 'string', maxLength: 50 } });
  for (const next of [added, removed, retyped, limit]) {
    const result = diffContracts(doc(v1), doc(next));
    assert.ok(result.breaking, JSON.stringify(result.changes));
    assert.ok(result.changes.every((c) => c.where.startsWith('event tag.assigned.v1')));
  }
  const why = '(a published event changes only with a new version)';
  assert.equal(changes(doc(v1), doc(removed)), [
    `breaking event tag.assigned.v1.data.tag: response field removed ${why}`,
  ]);
  assert.equal(changes(doc(v1), doc(added)), [
    `breaking event tag.assigned.v1.data.at: new response field ${why}`,
  ]);
  assert.equal(changes(doc(v1), doc(limit)), [
    'breaking event tag.assigned.v1: payload schema changed without a new version',
  ]);
  const hidden = entry('1', props, { 'x-visibility': 'internal' });
  assert.ok(changes(doc(v1), doc(hidden)).some((c) => /visibility changed/.test(c)));
});

test('a new version (or type) is compatible; removing a published one is breaking', () => {
  const v2 = entry('2', { user_id: { type: 'string' } });
  assert.equal(changes(doc(v1), doc(v1, v2)), [
    'compatible event tag.assigned.v2: new event type or version',
  ]);
  assert.equal(changes(doc(v1, v2), doc(v2)), [
    'breaking event tag.assigned.v1: published event version removed',
  ]);
});

test('the working contract carries spec/events as webhooks, and so does a release snapshot', () => {
  const working = loadWorkingContract(ROOT) as any;
  const catalog = readEventCatalog(path.join(ROOT, 'spec/events'));
  assert.equal(
    Object.keys(working.webhooks).sort(),
    catalog.map((e) => `${e.type}.v${e.version}`).sort(),
  );
  const text = fs.readFileSync(path.join(ROOT, 'spec/openapi.yaml'), 'utf8');
  const snapshot = parse(withEventWebhooksText(text, path.join(ROOT, 'spec/events')));
  assert.equal(snapshot.webhooks, working.webhooks);
  assert.equal(diffContracts(snapshot, working).changes, []);
});

test('npm run contract:diff fails on a published event schema changed in place', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'events-diff-'));
  try {
    fs.mkdirSync(path.join(tmp, 'spec'), { recursive: true });
    fs.cpSync(path.join(ROOT, 'spec/events'), path.join(tmp, 'spec/events'), { recursive: true });
    const text = fs.readFileSync(path.join(ROOT, 'spec/openapi.yaml'), 'utf8');
    fs.writeFileSync(path.join(tmp, 'spec/openapi.yaml'), text);
    const snapshot = path.join(tmp, 'snapshot.yaml');
    fs.writeFileSync(snapshot, withEventWebhooksText(text, path.join(tmp, 'spec/events')));
    const run = () =>
      spawnSync(process.execPath, ['scripts/contract-diff.ts', '--root', tmp, snapshot], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, INIT_CWD: ROOT },
      });
    const same = run();
    assert.is(same.status, 0, same.stderr);

    const file = path.join(tmp, 'spec/events/tag.removed/1.json');
    const schema = JSON.parse(fs.readFileSync(file, 'utf8'));
    delete schema.properties.user_id;
    schema.required = schema.required.filter((k: string) => k !== 'user_id');
    fs.writeFileSync(file, JSON.stringify(schema));
    const changed = run();
    assert.is(changed.status, 1, changed.stdout);
    assert.match(
      changed.stdout,
      /BREAKING {2}event tag\.removed\.v1\.data\.user_id: response field removed/,
    );
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test.run();
