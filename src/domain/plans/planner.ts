// Computes a plan: validates the manifest (its entries' shapes and properties against the
// contract's schemas, references, keys, the rules the services enforce) and compares each entry
// with the resource it names. Every problem is one detail at its path in the manifest.
import { AppError, type ErrorDetail } from '../../errors.ts';
import { fromId } from '../shared/ids.ts';
import type { State } from './state.ts';
import {
  isPlanType,
  isRef,
  PLAN_TYPES,
  type Change,
  type Manifest,
  type ManifestEntry,
  type ManifestSchemas,
  type PlanType,
  type Ref,
  type ServiceRules,
} from './types.ts';

/** The properties that name another resource: the type they name, and whether one is required. */
const REFERENCES: Partial<Record<PlanType, Record<string, { to: PlanType; required: boolean }>>> = {
  module: {
    product_id: { to: 'product', required: true },
    parent_id: { to: 'module', required: false },
  },
};

/** Properties set only at creation: the services offer no way to change them. */
const IMMUTABLE: Partial<Record<PlanType, string[]>> = {
  module: ['product_id', 'kind'],
  webhook: ['payload_version'],
};

/** The values a service stores for these properties (names trimmed, a blank description none). */
function normalize(type: PlanType, props: Record<string, unknown>): Record<string, unknown> {
  const out = { ...props };
  if (typeof out.name === 'string') out.name = out.name.trim();
  if ((type === 'product' || type === 'webhook') && 'description' in out)
    out.description = (typeof out.description === 'string' && out.description.trim()) || null;
  if (Array.isArray(out.event_types)) out.event_types = [...new Set(out.event_types)];
  return out;
}

/** JSON with sorted keys: two settings objects that differ only in key order are the same. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((k) => [k, x[k]]),
        )
      : x,
  );
const same = (a: unknown, b: unknown) => canonical(a ?? null) === canonical(b ?? null);

const detail = (field: string, code: string, message: string): ErrorDetail => ({
  field,
  code,
  message,
});

const invalid = (details: ErrorDetail[]) =>
  new AppError('plan_invalid', { details: details.slice(0, 100) });

/** `type.key` of a reference, split at the first dot (keys may hold dots). */
function refTarget(r: Ref): { type: string; key: string } | null {
  const dot = r.ref.indexOf('.');
  return dot > 0 ? { type: r.ref.slice(0, dot), key: r.ref.slice(dot + 1) } : null;
}

export function computePlan(
  manifest: Manifest,
  state: State,
  schemas: ManifestSchemas,
  rules: ServiceRules = {},
): Change[] {
  const entries = manifest.resources;
  const at = (i: number) => `resources.${i}`;

  const unsupported = entries.flatMap((e, i) =>
    e && typeof e === 'object' && !isPlanType(e.type)
      ? [
          detail(
            `${at(i)}.type`,
            'unsupported_resource',
            `Plans accept ${PLAN_TYPES.join(', ')}; not ${String(e.type)}.`,
          ),
        ]
      : [],
  );
  if (unsupported.length)
    throw new AppError('unsupported_resource', { details: unsupported.slice(0, 100) });

  const shape = entries.flatMap((e, i) => schemas.entry(e, at(i)));
  if (shape.length) throw invalid(shape);

  const details: ErrorDetail[] = [];
  const typed = entries as (ManifestEntry & { type: PlanType })[];

  // Keys: unique per type. An entry names an existing resource by id, else by a remembered key.
  const byKey = new Map<string, number>();
  const claimed = new Map<string, number>();
  const existing: (number | null)[] = typed.map((e, i) => {
    const k = `${e.type}.${e.key}`;
    if (byKey.has(k))
      details.push(detail(`${at(i)}.key`, 'duplicate_key', `Same key as ${at(byKey.get(k)!)}.`));
    else byKey.set(k, i);
    let id: number | null = null;
    if (e.id !== undefined) {
      id = fromId(e.id);
      if (id === null || !state.resources[e.type].has(id)) {
        details.push(detail(`${at(i)}.id`, 'not_found', `No ${e.type} has this id.`));
        return null;
      }
    } else {
      const remembered = state.keys.get(k);
      if (remembered !== undefined && state.resources[e.type].has(remembered)) id = remembered;
    }
    if (id === null) return null;
    const c = `${e.type}#${id}`;
    if (claimed.has(c)) {
      const field = e.id !== undefined ? `${at(i)}.id` : `${at(i)}.key`;
      details.push(detail(field, 'duplicate_id', `The same ${e.type} as ${at(claimed.get(c)!)}.`));
    } else claimed.set(c, i);
    return id;
  });

  // References, then each entry's properties against its type's create schema.
  const edges: number[][] = typed.map(() => []);
  typed.forEach((e, i) => {
    const props: Record<string, unknown> = { ...e.properties };
    for (const [name, rule] of Object.entries(REFERENCES[e.type] ?? {})) {
      const v = props[name];
      const field = `${at(i)}.properties.${name}`;
      if (name === 'product_id') delete props[name]; // a path parameter of the v3 route
      if (v === undefined) {
        if (rule.required) details.push(detail(field, 'required', `${name} is required.`));
        continue;
      }
      if (v === null && !rule.required) continue;
      if (isRef(v)) {
        const t = refTarget(v);
        const target = t && t.type === rule.to ? byKey.get(`${t.type}.${t.key}`) : undefined;
        if (target === undefined)
          details.push(
            detail(field, 'unknown_reference', `No ${rule.to} of this manifest is ${v.ref}.`),
          );
        else edges[i]!.push(target);
        if (name in props) props[name] = '1'; // any id: the schema checks the rest
        continue;
      }
      const id = typeof v === 'string' ? fromId(v) : null;
      if (id === null)
        details.push(
          detail(field, 'invalid_reference', 'An id, or {"ref": "<type>.<key>"} of this manifest.'),
        );
      else if (!state.resources[rule.to].has(id))
        details.push(detail(field, 'not_found', `No ${rule.to} has this id.`));
    }
    const invalidProps = schemas.properties(e.type, props, `${at(i)}.properties`);
    details.push(...invalidProps);
    if (invalidProps.length || !rules[e.type]) return;
    for (const d of rules[e.type]!(e.properties))
      details.push({ ...d, field: `${at(i)}.properties${d.field ? `.${d.field}` : ''}` });
  });
  if (details.length) throw invalid(details);

  details.push(...cycles(edges, (i) => `${at(i)}.properties`));

  /** A reference's value once resolved: the id of a resource that exists, else the reference. */
  const resolve = (v: unknown): unknown => {
    if (!isRef(v)) return v;
    const t = refTarget(v)!;
    const target = existing[byKey.get(`${t.type}.${t.key}`)!];
    return target === null || target === undefined ? v : String(target);
  };
  const desired = typed.map((e) => {
    const out = normalize(e.type, e.properties);
    for (const name of Object.keys(REFERENCES[e.type] ?? {}))
      if (name in out) out[name] = resolve(out[name]);
    return out;
  });

  // Modules: groups only at the top level, a parent is a group of the same product.
  typed.forEach((e, i) => {
    if (e.type !== 'module') return;
    const d = desired[i]!;
    const parent = e.properties.parent_id;
    if (parent === undefined || parent === null || edges[i]!.includes(i)) return;
    const field = `${at(i)}.properties.parent_id`;
    if (d.kind === 'group') {
      details.push(detail(field, 'hierarchy_violation', 'A group is only at the top level.'));
      return;
    }
    const p = isRef(parent)
      ? desired[byKey.get(parent.ref)!]!
      : state.resources.module.get(fromId(parent as string)!)!.values;
    if (p.kind !== 'group')
      details.push(detail(field, 'hierarchy_violation', 'The parent must be a group.'));
    else if (!same(p.product_id, d.product_id))
      details.push(detail(field, 'hierarchy_violation', 'The parent is of another product.'));
  });

  // What cannot change, and tag names (unique per account, case-insensitive).
  typed.forEach((e, i) => {
    const id = existing[i];
    if (id === null || id === undefined) return;
    const current = state.resources[e.type].get(id)!.values;
    for (const name of IMMUTABLE[e.type] ?? [])
      if (name in desired[i]! && !same(current[name], desired[i]![name]))
        details.push(
          detail(
            `${at(i)}.properties.${name}`,
            'immutable',
            `A ${e.type}'s ${name} cannot change.`,
          ),
        );
  });
  details.push(...tagNameClashes(typed, desired, existing, state, at));
  if (details.length) throw invalid(details);

  return changesOf(typed, desired, existing, state, manifest.prune === true);
}

/** Entries whose references lead back to them. */
function cycles(edges: number[][], field: (i: number) => string): ErrorDetail[] {
  return edges.flatMap((out, i) =>
    out.some((j) => reaches(edges, j, i))
      ? [detail(field(i), 'circular_reference', 'Its references lead back to it.')]
      : [],
  );
}

function reaches(edges: number[][], from: number, to: number): boolean {
  const seen = new Set<number>();
  const stack = [from];
  while (stack.length) {
    const i = stack.pop()!;
    if (i === to) return true;
    if (seen.has(i)) continue;
    seen.add(i);
    stack.push(...edges[i]!);
  }
  return false;
}

function tagNameClashes(
  typed: (ManifestEntry & { type: PlanType })[],
  desired: Record<string, unknown>[],
  existing: (number | null)[],
  state: State,
  at: (i: number) => string,
): ErrorDetail[] {
  // Every tag's name once the plan is applied: renamed ones by the manifest, the others as now.
  const holders = new Map<string, { entry?: number; id?: number }[]>();
  const add = (name: string, h: { entry?: number; id?: number }) => {
    const k = name.toLowerCase();
    holders.set(k, [...(holders.get(k) ?? []), h]);
  };
  const planned = new Set<number>();
  typed.forEach((e, i) => {
    if (e.type !== 'tag') return;
    if (existing[i] !== null) planned.add(existing[i]!);
    add(String(desired[i]!.name), { entry: i });
  });
  for (const [name, id] of state.tagNames) if (!planned.has(id)) add(name, { id });
  const out: ErrorDetail[] = [];
  for (const hs of holders.values()) {
    if (hs.length < 2) continue;
    for (const h of hs)
      if (h.entry !== undefined)
        out.push(
          detail(`${at(h.entry)}.properties.name`, 'already_exists', 'Another tag has this name.'),
        );
  }
  return out;
}

/**
 * The order changes apply in: tags, products, groups, modules (a parent before its children),
 * webhooks.
 */
const rank = (type: PlanType, values: Record<string, unknown>) =>
  type === 'tag'
    ? 0
    : type === 'product'
      ? 1
      : type === 'module'
        ? values.kind === 'group'
          ? 2
          : 3
        : 4;

function changesOf(
  typed: (ManifestEntry & { type: PlanType })[],
  desired: Record<string, unknown>[],
  existing: (number | null)[],
  state: State,
  prune: boolean,
): Change[] {
  const order = typed
    .map((e, i) => ({ i, r: rank(e.type, desired[i]!) }))
    .sort((a, b) => a.r - b.r || a.i - b.i);
  const changes: Change[] = order.map(({ i }) => {
    const e = typed[i]!;
    const d = desired[i]!;
    const product = e.type === 'module' ? productOf(d.product_id) : undefined;
    const input = { ...d };
    delete input.product_id;
    const id = existing[i]!;
    if (id === null) {
      const fields = Object.fromEntries(
        Object.entries(d).map(([k, to]) => [k, { from: null, to }]),
      );
      return {
        action: 'create',
        type: e.type,
        key: e.key,
        id: null,
        revision: null,
        fields,
        input,
        product,
      };
    }
    const current = state.resources[e.type].get(id)!;
    const fields: Change['fields'] = {};
    for (const [k, to] of Object.entries(d))
      if (!same(current.values[k], to)) fields[k] = { from: current.values[k] ?? null, to };
    const changed = Object.fromEntries(Object.keys(fields).map((k) => [k, input[k]]));
    return {
      action: Object.keys(fields).length ? 'update' : 'unchanged',
      type: e.type,
      key: e.key,
      id,
      revision: current.revision,
      fields,
      input: changed,
      product,
    };
  });
  if (!prune) return changes;

  // Deletions last, children before their parents: modules, groups, products, tags.
  const named = new Set(typed.map((e, i) => `${e.type}#${existing[i]}`));
  const keyOf = new Map([...state.keys].map(([k, id]) => [`${k.split('.')[0]}#${id}`, k]));
  const deletions: (Change & { r: number })[] = [];
  for (const type of PLAN_TYPES)
    for (const current of state.resources[type].values()) {
      const c = `${type}#${current.id}`;
      if (named.has(c)) continue;
      const remembered = keyOf.get(c);
      deletions.push({
        action: 'delete',
        type,
        key: remembered ? remembered.slice(type.length + 1) : `${type}-${current.id}`,
        id: current.id,
        revision: current.revision,
        fields: {},
        input: {},
        product: type === 'module' ? Number(current.values.product_id) : undefined,
        r: rank(type, current.values),
      });
    }
  deletions.sort((a, b) => b.r - a.r || a.id! - b.id!);
  return [...changes, ...deletions.map(({ r: _r, ...c }) => c)];
}

const productOf = (v: unknown): number | Ref => (isRef(v) ? v : Number(v));
