// What a contract release is: the level of a change (none, patch, minor, breaking) from the
// classified diff plus a text-only comparison, the version that level allows, and its changelog
// entries. Pure: no IO. The Versioning section of the specification: a minor adds an operation,
// field or enum value; a patch fixes text only; a breaking change never ships within v3.
import { diffContracts, type Change } from './diff.ts';

type Obj = Record<string, unknown>;

export type Level = 'none' | 'patch' | 'minor' | 'breaking';
export type Section = 'Breaking' | 'Added' | 'Changed' | 'Documentation';
export interface Entry {
  section: Section;
  text: string;
}
export interface ReleaseNotes {
  level: Level;
  entries: Entry[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Keys that only document: descriptions, examples, grouping. Never validated or routed on. */
const TEXT_KEYS = new Set(['description', 'summary', 'title', 'example', 'examples', 'tags']);
const TEXT_TOP = new Set(['info', 'tags', 'x-tagGroups', 'externalDocs']);

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The document without its text; inside `properties` the keys are field names, kept as is. */
export function stripText(node: unknown, names = false): unknown {
  if (Array.isArray(node)) return node.map((n) => stripText(n));
  if (!isObj(node)) return node;
  const out: Obj = {};
  for (const [key, value] of Object.entries(node)) {
    if (!names && TEXT_KEYS.has(key)) continue;
    out[key] = stripText(value, !names && (key === 'properties' || key === 'patternProperties'));
  }
  return out;
}

// ---------------------------------------------------------------- units of a document

interface Unit {
  label: string;
  op?: string;
  value: unknown;
  /** Any change to it is documentation (info, tags, tag groups). */
  textOnly?: boolean;
}

function operationsOf(doc: Obj): Map<string, Unit> {
  const units = new Map<string, Unit>();
  for (const [path, item] of Object.entries(isObj(doc.paths) ? doc.paths : {})) {
    if (!isObj(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isObj(op)) continue;
      const key = `${method.toUpperCase()} ${path}`;
      const id = typeof op.operationId === 'string' ? op.operationId : undefined;
      const shared = { parameters: item.parameters, servers: item.servers };
      units.set(key, { label: id ? `\`${id}\` (${key})` : key, op: key, value: { shared, op } });
    }
  }
  // The event catalog (`webhooks`, one entry per type and version) is published like operations.
  for (const [name, value] of Object.entries(isObj(doc.webhooks) ? doc.webhooks : {})) {
    units.set(`event ${name}`, { label: `event \`${name}\``, op: `event ${name}`, value });
  }
  return units;
}

const KINDS: Record<string, string> = {
  schemas: 'schema',
  parameters: 'parameter',
  responses: 'response',
  requestBodies: 'request body',
  headers: 'header',
  examples: 'example',
  securitySchemes: 'security scheme',
};

function componentsOf(doc: Obj): Map<string, Unit> {
  const units = new Map<string, Unit>();
  for (const [kind, group] of Object.entries(isObj(doc.components) ? doc.components : {})) {
    for (const [name, value] of Object.entries(isObj(group) ? group : {})) {
      const label = `${KINDS[kind] ?? kind} \`${name}\``;
      units.set(`${kind}/${name}`, { label, value, textOnly: kind === 'examples' });
    }
  }
  return units;
}

/** Top-level keys; the documentation-only ones (info, tags, tag groups) compare as text. */
function topOf(doc: Obj): Map<string, Unit> {
  const units = new Map<string, Unit>();
  for (const [key, value] of Object.entries(doc)) {
    if (key === 'paths' || key === 'components' || key === 'webhooks') continue;
    const v = key === 'info' && isObj(value) ? { ...value, version: undefined } : value;
    units.set(key, { label: `document \`${key}\``, value: v, textOnly: TEXT_TOP.has(key) });
  }
  return units;
}

type Diffs = { text: Unit[]; other: { unit: Unit; what: string }[] };

function compareUnits(a: Map<string, Unit>, b: Map<string, Unit>): Diffs {
  const out: Diffs = { text: [], other: [] };
  const differs = (unit: Unit, what: string) =>
    unit.textOnly ? out.text.push(unit) : out.other.push({ unit, what });
  for (const [key, after] of b) {
    const before = a.get(key);
    if (!before) differs(after, 'added');
    else if (same(before.value, after.value)) continue;
    else if (same(stripText(before.value), stripText(after.value))) out.text.push(after);
    else differs(after, 'definition changed');
  }
  for (const [key, before] of a) if (!b.has(key)) differs(before, 'removed');
  return out;
}

// ---------------------------------------------------------------- notes

/** Which changelog section a classified change belongs to. */
function sectionOf(c: Change): Section {
  if (c.kind === 'breaking') return 'Breaking';
  return /^new |added|now accepted|now returned/.test(c.what) ? 'Added' : 'Changed';
}

/** The event a change is about: the longest catalog name that starts its `where`. */
function eventOf(where: string, docs: Obj[]): { name: string; rest: string } | undefined {
  const m = /^event (.+)$/.exec(where);
  if (!m) return undefined;
  const names = docs.flatMap((d) => Object.keys(isObj(d.webhooks) ? d.webhooks : {}));
  const name = names
    .filter((n) => m[1] === n || m[1]!.startsWith(`${n}.`) || m[1]!.startsWith(`${n}[`))
    .sort((a, b) => b.length - a.length)[0];
  return name ? { name, rest: m[1]!.slice(name.length).replace(/^\./, '') } : undefined;
}

/** The unit (operation or event) a classified change belongs to. */
function subjectOf(c: Change, docs: Obj[]): string | undefined {
  const event = eventOf(c.where, docs);
  return event ? `event ${event.name}` : /^([A-Z]+ \S+)/.exec(c.where)?.[1];
}

/** `GET /users response 200 body.data.email` -> "`listUsers` (GET /users) response 200 `data.email`". */
export function describeChange(c: Change, oldDoc: Obj, newDoc: Obj): string {
  const event = eventOf(c.where, [oldDoc, newDoc]);
  if (event) {
    return `event \`${event.name}\`${event.rest ? ` payload \`${event.rest}\`` : ''}: ${c.what}`;
  }
  const m = /^([A-Z]+) (\S+)(?: (.*))?$/.exec(c.where);
  if (!m) return `${c.where.replace(/^operation (\S+)$/, '`$1`')}: ${c.what}`;
  const [, method, path, rest] = m;
  const idOf = (doc: Obj) => {
    const item = isObj(doc.paths) ? doc.paths[path!] : undefined;
    const op = isObj(item) ? item[method!.toLowerCase()] : undefined;
    return isObj(op) && typeof op.operationId === 'string' ? op.operationId : undefined;
  };
  const id = idOf(newDoc) ?? idOf(oldDoc);
  const name = id ? `\`${id}\` (${method} ${path})` : `${method} ${path}`;
  // "new operation listUsers" once the entry is already named by its operationId
  const what = rest || !id ? c.what : c.what.replace(` ${id}`, '').replace(' (operationId )', '');
  return rest ? `${name} ${place(rest)}: ${what}` : `${name}: ${what}`;
}

function place(rest: string): string {
  let m = /^(query|path|header|cookie)\.(.+)$/.exec(rest);
  if (m) return `${m[1]} parameter \`${m[2]}\``;
  m = /^(request|response \S+)( \S+\/\S+)? body(.*)$/.exec(rest);
  if (m) {
    const field = m[3]!.replace(/^\./, '');
    return field ? `${m[1]}${m[2] ?? ''} \`${field}\`` : `${m[1]}${m[2] ?? ''} body`;
  }
  m = /^(response \S+) header (.+)$/.exec(rest);
  if (m) return `${m[1]} header \`${m[2]}\``;
  return rest;
}

export function releaseNotes(oldRaw: unknown, newRaw: unknown): ReleaseNotes {
  if (!isObj(oldRaw) || !isObj(newRaw)) throw new TypeError('both contracts must be objects');
  const [oldDoc, newDoc] = [oldRaw, newRaw];
  const { changes, breaking, sameMajor } = diffContracts(oldDoc, newDoc);
  const entries: Entry[] = changes.map((c) => ({
    section: sectionOf(c),
    text: describeChange(c, oldDoc, newDoc),
  }));

  const ops = compareUnits(operationsOf(oldDoc), operationsOf(newDoc));
  const components = compareUnits(componentsOf(oldDoc), componentsOf(newDoc));
  const top = compareUnits(topOf(oldDoc), topOf(newDoc));
  const classified = new Set(changes.map((c) => subjectOf(c, [oldDoc, newDoc])));
  // What the schema diff does not see (permissions, security, extensions) still changes
  // behaviour; a component's own change shows through the operations using it, if any does.
  const unseen = ops.other.filter((o) => !classified.has(o.unit.op));
  const other = [...unseen, ...top.other];
  if (!changes.length && !other.length) other.push(...components.other);
  for (const o of other) entries.push({ section: 'Changed', text: `${o.unit.label}: ${o.what}` });
  for (const u of [...ops.text, ...components.text, ...top.text]) {
    entries.push({ section: 'Documentation', text: `${u.label}: descriptions or examples` });
  }

  let level: Level = 'none';
  if (entries.some((e) => e.section === 'Documentation')) level = 'patch';
  if (entries.some((e) => e.section === 'Added' || e.section === 'Changed')) level = 'minor';
  if (breaking && sameMajor) level = 'breaking';
  return { level, entries };
}

// ---------------------------------------------------------------- versions

export function parseVersion(v: string): [number, number, number] | null {
  const m = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

export function compareVersions(a: string, b: string): number {
  const [x, y] = [parseVersion(a), parseVersion(b)];
  if (!x || !y) throw new Error(`not a version: ${x ? b : a}`);
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** Why `next` cannot follow `previous` for a change of this level, or null when it can. */
export function refuseVersion(previous: string, next: string, level: Level): string | null {
  const p = parseVersion(previous);
  const n = parseVersion(next);
  if (!p) return `the newest release ${previous} is not a MAJOR.MINOR.PATCH version`;
  if (!n) return `${next} is not a MAJOR.MINOR.PATCH version`;
  if (level === 'breaking')
    return `breaking changes since ${previous}: they never ship within v${p[0]} (v${p[0] + 1} gets its own OpenAPI document)`;
  if (level === 'none') return `nothing changed since ${previous}: there is nothing to release`;
  const patch = `${p[0]}.${p[1]}.${p[2] + 1}`;
  const minor = `${p[0]}.${p[1] + 1}.0`;
  if (n[0] !== p[0]) return `${next} leaves v${p[0]}: releases of this document stay within it`;
  if (next !== patch && next !== minor)
    return `${next} does not follow ${previous}: the next release is ${patch} (patch) or ${minor} (minor)`;
  if (level === 'minor' && next === patch)
    return `the changes since ${previous} add or change the contract: that needs a minor release (${minor}), not ${next}`;
  return null;
}

// ---------------------------------------------------------------- markdown

const ORDER: Section[] = ['Breaking', 'Added', 'Changed', 'Documentation'];

/** The entries grouped under `### Section` headings, the same in the changelog and the CLI. */
export function renderEntries(entries: Entry[]): string {
  const blocks: string[] = [];
  for (const section of ORDER) {
    const lines = entries.filter((e) => e.section === section).map((e) => `- ${e.text}`);
    if (lines.length) blocks.push(`### ${section}\n\n${lines.join('\n')}`);
  }
  return blocks.join('\n\n');
}

export function renderSection(version: string, date: string, entries: Entry[]): string {
  return `## ${version} (${date})\n\n${renderEntries(entries)}\n`;
}

/** Inserts a release section above the newest one (after the file's introduction). */
export function prependSection(changelog: string, section: string): string {
  const at = changelog.search(/^## /m);
  if (at < 0) return `${changelog.trimEnd()}\n\n${section}`;
  return `${changelog.slice(0, at)}${section}\n${changelog.slice(at)}`;
}
