// Where the contract lives on disk: spec/openapi.yaml (the working contract), spec/releases/
// (one published snapshot per release, named <version>.yaml) and spec/CHANGELOG.md. Every path
// is relative to a root, so the release tooling can run on a copy of the tree.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { compareVersions, parseVersion } from './release.ts';
import { eventsDir, withEventWebhooks } from './events.ts';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

export const contractPaths = (root: string) => ({
  spec: path.join(root, 'spec/openapi.yaml'),
  releases: path.join(root, 'spec/releases'),
  changelog: path.join(root, 'spec/CHANGELOG.md'),
  release: (version: string) => path.join(root, 'spec/releases', `${version}.yaml`),
});

/** Published release versions, newest first. */
export function releases(root: string): string[] {
  const dir = contractPaths(root).releases;
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .map((f) => /^(.+)\.yaml$/.exec(f)?.[1])
    .filter((v): v is string => v !== undefined && parseVersion(v) !== null)
    .sort((a, b) => compareVersions(b, a));
}

/** Parses a YAML (or JSON) file that must be an OpenAPI document; throws a readable Error. */
export function loadContract(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${file}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new Error(`cannot parse ${file}: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || !('openapi' in doc)) {
    throw new Error(`${file} is not an OpenAPI document (no top-level "openapi" field)`);
  }
  return doc as Record<string, unknown>;
}

/**
 * The working contract as it is published: spec/openapi.yaml with the event catalog
 * (spec/events) as its `webhooks` section, so a release snapshot carries the event schemas and
 * `contract:diff` sees a published one change.
 */
export function loadWorkingContract(root: string): Record<string, unknown> {
  return withEventWebhooks(loadContract(contractPaths(root).spec), eventsDir(root));
}
