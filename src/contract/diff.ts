// Classifies the differences between two OpenAPI 3.x contract releases as compatible or
// breaking, following the Versioning section of spec/openapi.yaml. Pure: no IO, no globals.
//
// Requests and responses are judged differently on purpose: a server may start accepting more
// (looser request validation) but must not start sending what clients were never told about,
// and vice versa for tightening.

export type Change = {
  kind: 'compatible' | 'breaking';
  /** e.g. "GET /users response 200 body.data.email" or "operation listUsers" */
  where: string;
  /** human sentence */
  what: string;
};

export type DiffResult = { changes: Change[]; breaking: boolean; sameMajor: boolean };

type Obj = Record<string, unknown>;
type Direction = 'request' | 'response';

type Ctx = {
  oldDoc: Obj;
  newDoc: Obj;
  changes: Change[];
  /** schema pairs currently being compared, to stop on recursive schemas */
  active: Set<string>;
};

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * Compares two parsed OpenAPI documents. Throws on input that is not an object or on a `$ref`
 * that cannot be resolved locally, because a silently skipped schema would hide changes.
 */
export function diffContracts(oldDoc: unknown, newDoc: unknown): DiffResult {
  if (!isObj(oldDoc) || !isObj(newDoc)) throw new TypeError('both contracts must be objects');
  const ctx: Ctx = { oldDoc, newDoc, changes: [], active: new Set() };
  diffOperations(ctx);
  diffEventSchemas(ctx);
  return {
    changes: ctx.changes,
    breaking: ctx.changes.some((c) => c.kind === 'breaking'),
    sameMajor: sameMajor(oldDoc, newDoc),
  };
}

// ---------------------------------------------------------------- small helpers

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (v: unknown): Obj => (isObj(v) ? v : {});
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const show = (v: unknown): string => (v === undefined ? 'none' : JSON.stringify(v));

function report(ctx: Ctx, kind: Change['kind'], where: string, what: string): void {
  ctx.changes.push({ kind, where, what });
}

/** A version we cannot read counts as "same major", so a typo cannot bypass the gate. */
function sameMajor(a: Obj, b: Obj): boolean {
  const major = (doc: Obj) => /^\s*v?(\d+)/.exec(String(obj(doc.info).version ?? ''))?.[1];
  const [x, y] = [major(a), major(b)];
  return x === undefined || y === undefined || x === y;
}

// ---------------------------------------------------------------- $ref resolution

function lookup(doc: Obj, ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`only local $refs are supported, got "${ref}"`);
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObj(node) || !(key in node)) throw new Error(`unresolvable $ref "${ref}"`);
    node = node[key];
  }
  return node;
}

/** Follows a `$ref` chain; sibling keys next to a `$ref` (allowed in 3.1) override the target. */
function deref(doc: Obj, node: unknown): Obj {
  let current = obj(node);
  const seen = new Set<string>();
  while (typeof current.$ref === 'string') {
    const ref = current.$ref;
    if (seen.has(ref)) throw new Error(`circular $ref chain at "${ref}"`);
    seen.add(ref);
    const { $ref: _ref, ...siblings } = current;
    current = { ...obj(lookup(doc, ref)), ...siblings };
  }
  return current;
}

/**
 * Resolves a schema into one flat object: `$ref` followed, `allOf` merged, and the common 3.1
 * `oneOf: [X, {type: 'null'}]` spelling turned into "X, nullable". `seen` stops an allOf that
 * refers back to itself.
 */
function normalize(doc: Obj, node: unknown, seen: Set<unknown> = new Set()): Obj {
  if (seen.has(node)) return {};
  seen = new Set(seen).add(node);
  const schema = deref(doc, node);
  if (Array.isArray(schema.allOf)) return mergeAllOf(doc, schema, seen);
  for (const key of ['oneOf', 'anyOf']) {
    const members = list(schema[key]);
    const nullAt = members.findIndex((m) => obj(m).type === 'null');
    if (members.length === 2 && nullAt >= 0) {
      return { ...normalize(doc, members[1 - nullAt], seen), nullable: true };
    }
  }
  return schema;
}

function mergeAllOf(doc: Obj, schema: Obj, seen: Set<unknown>): Obj {
  const { allOf, ...own } = schema;
  const parts = [...list(allOf).map((m) => normalize(doc, m, seen)), own];
  const merged: Obj = {};
  const properties: Obj = {};
  const required = new Set<string>();
  for (const part of parts) {
    Object.assign(properties, obj(part.properties)); // later member wins on a name clash
    for (const name of list(part.required)) required.add(String(name));
    for (const [key, value] of Object.entries(part)) {
      if (key !== 'properties' && key !== 'required' && !(key in merged)) merged[key] = value;
    }
  }
  if (Object.keys(properties).length) merged.properties = properties;
  if (required.size) merged.required = [...required];
  return merged;
}

// ---------------------------------------------------------------- operations

type Operation = { pathItem: Obj; op: Obj };

function operationsOf(doc: Obj): Map<string, Operation> {
  const ops = new Map<string, Operation>();
  for (const [path, rawItem] of Object.entries(obj(doc.paths))) {
    const pathItem = deref(doc, rawItem);
    for (const method of METHODS) {
      if (isObj(pathItem[method])) {
        ops.set(`${method.toUpperCase()} ${path}`, { pathItem, op: pathItem[method] as Obj });
      }
    }
  }
  return ops;
}

function diffOperations(ctx: Ctx): void {
  const before = operationsOf(ctx.oldDoc);
  const after = operationsOf(ctx.newDoc);
  const keyById = new Map([...after].map(([key, { op }]) => [op.operationId, key]));

  for (const [key, a] of before) {
    const b = after.get(key);
    if (b) {
      diffOperation(ctx, key, a, b);
      continue;
    }
    const id = a.op.operationId;
    const movedTo = id === undefined ? undefined : keyById.get(id);
    const what = movedTo
      ? `operation ${id} moved to ${movedTo}; the old path/method no longer exists`
      : `operation removed${id === undefined ? '' : ` (operationId ${id})`}`;
    report(ctx, 'breaking', key, what);
  }
  for (const [key, b] of after) {
    if (before.has(key)) continue;
    const id = b.op.operationId;
    report(ctx, 'compatible', key, `new operation${id === undefined ? '' : ` ${id}`}`);
  }
}

function diffOperation(ctx: Ctx, key: string, a: Operation, b: Operation): void {
  const [oldId, newId] = [a.op.operationId, b.op.operationId];
  if (oldId !== newId) {
    if (oldId === undefined) report(ctx, 'compatible', key, `operationId ${newId} assigned`);
    else report(ctx, 'breaking', `operation ${oldId}`, `operationId renamed to ${show(newId)}`);
  }
  diffParameters(ctx, key, parametersOf(ctx.oldDoc, a), parametersOf(ctx.newDoc, b));
  diffRequestBody(ctx, key, a.op.requestBody, b.op.requestBody);
  diffResponses(ctx, key, obj(a.op.responses), obj(b.op.responses));
}

// ---------------------------------------------------------------- published events

/**
 * The `webhooks` section holds the event catalog, one entry per type and version
 * (`user.created.v1`, see src/contract/events.ts). A published event never changes shape without
 * a new version: any change to a published version's payload, or to its visibility, is breaking,
 * even one that would be compatible in a response; a new type or version is compatible, and a
 * removed one breaking.
 */
function diffEventSchemas(ctx: Ctx): void {
  const [before, after] = [obj(ctx.oldDoc.webhooks), obj(ctx.newDoc.webhooks)];
  const payload = (doc: Obj, entry: unknown) => {
    const op = obj(deref(doc, entry).post);
    return obj(obj(obj(deref(doc, op.requestBody).content)['application/json']).schema);
  };
  for (const [name, entry] of Object.entries(before)) {
    const where = `event ${name}`;
    if (!(name in after)) {
      report(ctx, 'breaking', where, 'published event version removed');
      continue;
    }
    const [a, b] = [obj(deref(ctx.oldDoc, entry).post), obj(deref(ctx.newDoc, after[name]).post)];
    if (a['x-visibility'] !== b['x-visibility']) {
      const what = `visibility changed from ${show(a['x-visibility'])} to ${show(b['x-visibility'])} without a new version`;
      report(ctx, 'breaking', where, what);
    }
    const found: Change[] = [];
    const sub: Ctx = { ...ctx, changes: found };
    compareSchema(
      sub,
      payload(ctx.oldDoc, entry),
      payload(ctx.newDoc, after[name]),
      where,
      'response',
    );
    for (const c of found)
      report(
        ctx,
        'breaking',
        c.where,
        `${c.what} (a published event changes only with a new version)`,
      );
    const [x, y] = [payload(ctx.oldDoc, entry), payload(ctx.newDoc, after[name])];
    if (!found.length && !same(withoutText(ctx.oldDoc, x), withoutText(ctx.newDoc, y)))
      report(ctx, 'breaking', where, 'payload schema changed without a new version');
  }
  for (const name of Object.keys(after)) {
    if (!(name in before)) report(ctx, 'compatible', `event ${name}`, 'new event type or version');
  }
}

/** A schema with its `$ref`s resolved and its documentation (descriptions, examples) left out. */
function withoutText(doc: Obj, node: unknown, depth = 0): unknown {
  if (depth > 50) return node;
  if (Array.isArray(node)) return node.map((n) => withoutText(doc, n, depth + 1));
  if (!isObj(node)) return node;
  const out: Obj = {};
  for (const [k, v] of Object.entries(deref(doc, node))) {
    if (k === 'description' || k === 'title' || k === 'examples' || k === 'example') continue;
    out[k] =
      k === 'properties' && isObj(v)
        ? Object.fromEntries(Object.entries(v).map(([p, s]) => [p, withoutText(doc, s, depth + 1)]))
        : withoutText(doc, v, depth + 1);
  }
  return out;
}

// ---------------------------------------------------------------- parameters (request side)

/** Keyed "in.name"; operation-level parameters override path-level ones, as in OpenAPI. */
function parametersOf(doc: Obj, { pathItem, op }: Operation): Map<string, Obj> {
  const params = new Map<string, Obj>();
  for (const raw of [...list(pathItem.parameters), ...list(op.parameters)]) {
    const p = deref(doc, raw);
    const name = p.in === 'header' ? String(p.name).toLowerCase() : String(p.name);
    params.set(`${String(p.in)}.${name}`, p);
  }
  return params;
}

const isRequiredParam = (p: Obj): boolean => p.required === true || p.in === 'path';

function diffParameters(ctx: Ctx, op: string, a: Map<string, Obj>, b: Map<string, Obj>): void {
  for (const [key, oldParam] of a) {
    const newParam = b.get(key);
    if (newParam) diffParameter(ctx, `${op} ${key}`, oldParam, newParam);
    else report(ctx, 'breaking', `${op} ${key}`, 'parameter removed');
  }
  for (const [key, newParam] of b) {
    if (a.has(key)) continue;
    if (isRequiredParam(newParam))
      report(ctx, 'breaking', `${op} ${key}`, 'new required parameter');
    else report(ctx, 'compatible', `${op} ${key}`, 'new optional parameter');
  }
}

function diffParameter(ctx: Ctx, where: string, a: Obj, b: Obj): void {
  const [wasRequired, isRequired] = [isRequiredParam(a), isRequiredParam(b)];
  if (!wasRequired && isRequired)
    report(ctx, 'breaking', where, 'optional parameter became required');
  if (wasRequired && !isRequired) report(ctx, 'compatible', where, 'parameter no longer required');
  // Clients that omit `sort` rely on the default order, so changing it changes results silently.
  const [oldDefault, newDefault] = [obj(a.schema).default, obj(b.schema).default];
  if (a.in === 'query' && a.name === 'sort' && !same(oldDefault, newDefault)) {
    const what = `default list ordering changed from ${show(oldDefault)} to ${show(newDefault)}`;
    report(ctx, 'breaking', where, what);
  }
  compareSchema(ctx, a.schema, b.schema, where, 'request');
}

// ---------------------------------------------------------------- bodies and responses

function diffRequestBody(ctx: Ctx, op: string, rawA: unknown, rawB: unknown): void {
  const where = `${op} request`;
  if (rawA === undefined && rawB === undefined) return;
  if (rawB === undefined) return report(ctx, 'breaking', where, 'request body removed');
  const b = deref(ctx.newDoc, rawB);
  if (rawA === undefined) {
    if (b.required === true) report(ctx, 'breaking', where, 'new required request body');
    else report(ctx, 'compatible', where, 'new optional request body');
    return;
  }
  const a = deref(ctx.oldDoc, rawA);
  if (a.required !== true && b.required === true) {
    report(ctx, 'breaking', where, 'optional request body became required');
  }
  if (a.required === true && b.required !== true) {
    report(ctx, 'compatible', where, 'request body no longer required');
  }
  diffContent(ctx, where, obj(a.content), obj(b.content), 'request');
}

function diffResponses(ctx: Ctx, op: string, a: Obj, b: Obj): void {
  for (const status of Object.keys(a)) {
    const where = `${op} response ${status}`;
    if (!(status in b)) {
      report(ctx, 'breaking', where, `documented response status ${status} removed`);
      continue;
    }
    const [oldRes, newRes] = [deref(ctx.oldDoc, a[status]), deref(ctx.newDoc, b[status])];
    diffHeaders(ctx, where, obj(oldRes.headers), obj(newRes.headers));
    diffContent(ctx, where, obj(oldRes.content), obj(newRes.content), 'response');
  }
  for (const status of Object.keys(b)) {
    if (status in a) continue;
    const where = `${op} response ${status}`;
    // A new error code is just another failure clients already handle generically; a new
    // success/redirect status changes how a documented case is answered.
    if (/^[45]/.test(status) || status === 'default') {
      report(ctx, 'compatible', where, `new error response ${status}`);
    } else {
      report(
        ctx,
        'breaking',
        where,
        `new non-error status ${status}; clients only know ${statusList(a)}`,
      );
    }
  }
}

const statusList = (responses: Obj): string => Object.keys(responses).join(', ') || 'none';

function diffHeaders(ctx: Ctx, where: string, a: Obj, b: Obj): void {
  const lower = (h: Obj) => new Map(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
  const [before, after] = [lower(a), lower(b)];
  for (const [name, oldHeader] of before) {
    const at = `${where} header ${name}`;
    if (!after.has(name)) {
      report(ctx, 'breaking', at, 'response header removed');
      continue;
    }
    const [x, y] = [deref(ctx.oldDoc, oldHeader), deref(ctx.newDoc, after.get(name))];
    compareSchema(ctx, x.schema, y.schema, at, 'response');
  }
  for (const name of after.keys()) {
    if (!before.has(name))
      report(ctx, 'compatible', `${where} header ${name}`, 'new response header');
  }
}

/** Per media type; JSON is the default and is left out of `where` to keep it short. */
function diffContent(ctx: Ctx, where: string, a: Obj, b: Obj, dir: Direction): void {
  const verb = dir === 'request' ? 'accepted' : 'returned';
  for (const type of Object.keys(a)) {
    if (!(type in b)) {
      report(ctx, 'breaking', where, `media type ${type} no longer ${verb}`);
      continue;
    }
    const at = type === 'application/json' ? `${where} body` : `${where} ${type} body`;
    compareSchema(ctx, obj(a[type]).schema, obj(b[type]).schema, at, dir);
  }
  for (const type of Object.keys(b)) {
    if (!(type in a)) report(ctx, 'compatible', where, `media type ${type} now ${verb}`);
  }
}

// ---------------------------------------------------------------- schemas

/** The component a `$ref` chain ends at (the node itself when it is inline). */
function refTarget(doc: Obj, node: unknown): unknown {
  for (let hops = 0; isObj(node) && typeof node.$ref === 'string' && hops < 100; hops++) {
    node = lookup(doc, node.$ref);
  }
  return node;
}

const objectIds = new WeakMap<object, number>();
let nextObjectId = 1;
function identity(node: unknown): number {
  if (typeof node !== 'object' || node === null) return 0;
  if (!objectIds.has(node)) objectIds.set(node, nextObjectId++);
  return objectIds.get(node)!;
}

function compareSchema(ctx: Ctx, rawA: unknown, rawB: unknown, where: string, dir: Direction) {
  if (rawA === undefined && rawB === undefined) return;
  const a = normalize(ctx.oldDoc, rawA);
  const b = normalize(ctx.newDoc, rawB);
  // A recursive schema (tree, linked list) comes back to the same pair of components; that
  // pair is already being compared further up, so stop instead of looping.
  const key = `${identity(refTarget(ctx.oldDoc, rawA))}:${identity(refTarget(ctx.newDoc, rawB))}`;
  if (ctx.active.has(key)) return;
  ctx.active.add(key);
  try {
    if (!compareType(ctx, a, b, where, dir)) return; // a retyped field: details below are noise
    compareEnum(ctx, a, b, where, dir);
    if (dir === 'request') compareLimits(ctx, a, b, where);
    compareProperties(ctx, a, b, where, dir);
    if (a.items !== undefined || b.items !== undefined) {
      compareSchema(ctx, a.items, b.items, `${where}[]`, dir);
    }
  } finally {
    ctx.active.delete(key);
  }
}

function typeInfo(s: Obj): { types: string; nullable: boolean } {
  const raw = (Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type]).map(String);
  let types = raw.filter((t) => t !== 'null').sort();
  if (!types.length && isObj(s.properties)) types = ['object'];
  if (!types.length && s.items !== undefined) types = ['array'];
  return { types: types.join('|') || 'any', nullable: raw.includes('null') || s.nullable === true };
}

/** Returns false when the type itself changed, so the caller stops descending. */
function compareType(ctx: Ctx, a: Obj, b: Obj, where: string, dir: Direction): boolean {
  const [x, y] = [typeInfo(a), typeInfo(b)];
  if (x.types !== y.types) {
    report(ctx, 'breaking', where, `type changed from ${x.types} to ${y.types}`);
    return false;
  }
  if (a.format !== b.format) {
    report(ctx, 'breaking', where, `format changed from ${show(a.format)} to ${show(b.format)}`);
  }
  // Null is one more value: fine to start accepting, not fine to start sending.
  if (x.nullable !== y.nullable) {
    const widened = y.nullable;
    const kind = widened === (dir === 'request') ? 'compatible' : 'breaking';
    const what =
      dir === 'request'
        ? widened
          ? 'now accepts null'
          : 'no longer accepts null'
        : widened
          ? 'may now be null'
          : 'no longer null';
    report(ctx, kind, where, what);
  }
  return true;
}

/**
 * Whether adding enum values is allowed is decided by the OLD contract's `x-extensible`
 * marker: that is what existing clients were promised. Unmarked enums are closed in responses
 * (clients may switch over them) but open in requests (accepting more is relaxed validation).
 */
function compareEnum(ctx: Ctx, a: Obj, b: Obj, where: string, dir: Direction): void {
  const [before, after] = [a.enum, b.enum];
  if (!Array.isArray(before) && !Array.isArray(after)) return;
  const marker = a['x-extensible'];
  compareMarker(ctx, marker, b['x-extensible'], where);

  if (!Array.isArray(before)) {
    const kind = dir === 'request' ? 'breaking' : 'compatible';
    return report(ctx, kind, where, `now restricted to enum ${show(after)}`);
  }
  if (!Array.isArray(after)) {
    const kind = dir === 'request' || marker === true ? 'compatible' : 'breaking';
    return report(ctx, kind, where, 'no longer restricted to an enum');
  }
  for (const value of before) {
    if (!after.some((v) => same(v, value))) {
      report(ctx, 'breaking', where, `enum value ${show(value)} removed`);
    }
  }
  const [kind, why] = enumAddition(marker, dir);
  for (const value of after) {
    if (!before.some((v) => same(v, value))) {
      report(ctx, kind, where, `enum value ${show(value)} added (${why})`);
    }
  }
}

function enumAddition(marker: unknown, dir: Direction): [Change['kind'], string] {
  if (marker === true) return ['compatible', 'enum is marked x-extensible: true'];
  if (marker === false) return ['breaking', 'enum is marked x-extensible: false'];
  return dir === 'request'
    ? ['compatible', 'unmarked enum (no x-extensible) in a request: accepting more is relaxed']
    : ['breaking', 'unmarked enum (no x-extensible) is treated as closed in responses'];
}

/** Withdrawing the extensibility promise is breaking; granting or clarifying it is not. */
function compareMarker(ctx: Ctx, before: unknown, after: unknown, where: string): void {
  if (before === after) return;
  const label = (m: unknown) => (m === undefined ? 'unmarked' : String(m));
  const kind = before === true ? 'breaking' : 'compatible';
  report(ctx, kind, where, `x-extensible changed from ${label(before)} to ${label(after)}`);
}

const UPPER_LIMITS = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties'];
const LOWER_LIMITS = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties'];

/** Request inputs only: a tighter limit rejects requests that used to be valid. */
function compareLimits(ctx: Ctx, a: Obj, b: Obj, where: string): void {
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  for (const key of [...UPPER_LIMITS, ...LOWER_LIMITS]) {
    const [x, y] = [num(a[key]), num(b[key])];
    if (x === y) continue;
    if (y === undefined) {
      report(ctx, 'compatible', where, `${key} ${x} removed`);
    } else if (x === undefined) {
      report(ctx, 'breaking', where, `${key} ${y} added`);
    } else {
      const tightened = UPPER_LIMITS.includes(key) ? y < x : y > x;
      const verb = y < x ? 'lowered' : 'raised';
      report(ctx, tightened ? 'breaking' : 'compatible', where, `${key} ${verb} from ${x} to ${y}`);
    }
  }
  if (a.pattern !== b.pattern) {
    // A changed regex cannot be proven to accept everything the old one did.
    const what =
      b.pattern === undefined
        ? `pattern ${show(a.pattern)} removed`
        : `pattern changed from ${show(a.pattern)} to ${show(b.pattern)}`;
    report(ctx, b.pattern === undefined ? 'compatible' : 'breaking', where, what);
  }
}

function compareProperties(ctx: Ctx, a: Obj, b: Obj, where: string, dir: Direction): void {
  const [before, after] = [obj(a.properties), obj(b.properties)];
  const wasRequired = new Set(list(a.required).map(String));
  const isRequired = new Set(list(b.required).map(String));
  for (const name of Object.keys(before)) {
    const at = `${where}.${name}`;
    if (!(name in after)) {
      report(ctx, 'breaking', at, `${dir} field removed`);
      continue;
    }
    compareRequired(ctx, wasRequired.has(name), isRequired.has(name), at, dir);
    compareSchema(ctx, before[name], after[name], at, dir);
  }
  for (const name of Object.keys(after)) {
    if (name in before) continue;
    const at = `${where}.${name}`;
    if (dir === 'response') report(ctx, 'compatible', at, 'new response field');
    else if (isRequired.has(name)) report(ctx, 'breaking', at, 'new required request field');
    else report(ctx, 'compatible', at, 'new optional request field');
  }
}

/** Request: clients must now send it. Response: clients can no longer count on receiving it. */
function compareRequired(ctx: Ctx, was: boolean, is: boolean, where: string, dir: Direction) {
  if (was === is) return;
  if (dir === 'request') {
    if (is) report(ctx, 'breaking', where, 'optional field became required');
    else report(ctx, 'compatible', where, 'field no longer required');
  } else {
    if (is) report(ctx, 'compatible', where, 'field is now always present');
    else report(ctx, 'breaking', where, 'field no longer always present (removed from required)');
  }
}
