// Computes a plan: validates the manifest (its entries' shapes and properties against the
// contract's schemas, references, keys, the rules the services enforce) and compares each entry
// with the resource it names. Every problem is one detail at its path in the manifest.
import { AppError, type ErrorDetail } from '../../errors.ts';
import { fromId } from '../shared/ids.ts';
import type { State } from './state.ts';
import { mapRefs, refTarget, sitesOf } from './refs.ts';
import { crossRules, detail, normalize, same, type Planned } from './rules.ts';
import { moveEdges, reaches, swaps, type Move } from './moves.ts';
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

const invalid = (details: ErrorDetail[]) =>
  new AppError('plan_invalid', { details: details.slice(0, 100) });

/** Whether an id names a resource a property of `from` may name. */
function exists(state: State, from: PlanType, to: PlanType, id: number): boolean {
  if (to === 'product' && from === 'delivery') return state.productIds.has(id);
  if (to === 'access_schedule') return state.schedules.has(id);
  if (to === 'tag') return state.tagIds.has(id);
  return state.resources[to].has(id);
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
    const props: Record<string, unknown> = structuredClone(e.properties);
    for (const s of sitesOf(e.type, props)) {
      const v = s.holder[s.key];
      const field = `${at(i)}.properties.${s.path}`;
      if (s.rule.param) delete s.holder[s.key]; // a path parameter of the v3 route
      if (v === undefined) {
        if (s.rule.required) details.push(detail(field, 'required', `${s.path} is required.`));
        continue;
      }
      if (v === null && !s.rule.required) continue;
      const to = s.rule.to;
      if (isRef(v)) {
        const t = refTarget(v);
        const target = t && t.type === to ? byKey.get(`${t.type}.${t.key}`) : undefined;
        if (target === undefined)
          details.push(
            detail(field, 'unknown_reference', `No ${to} of this manifest is ${v.ref}.`),
          );
        else edges[i]!.push(target);
        if (!s.rule.param) s.holder[s.key] = '1'; // any id: the schema checks the rest
        continue;
      }
      const id = typeof v === 'string' ? fromId(v) : null;
      if (id === null) {
        if (s.rule.param || typeof v === 'object')
          details.push(
            detail(
              field,
              'invalid_reference',
              'An id, or {"ref": "<type>.<key>"} of this manifest.',
            ),
          );
      } else if (!exists(state, e.type, to, id))
        details.push(detail(field, 'not_found', `No ${to} has this id.`));
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
  const resolve = (v: Ref): unknown => {
    const t = refTarget(v)!;
    const target = existing[byKey.get(`${t.type}.${t.key}`)!];
    return target === null || target === undefined ? v : String(target);
  };
  const desired = typed.map((e) =>
    normalize(e.type, mapRefs(e.type, e.properties, resolve), state),
  );

  const planned: Planned = { typed, desired, existing, byKey, state, at, prune: !!manifest.prune };
  details.push(...crossRules(planned));
  if (details.length) throw invalid(details);
  const moves = moveEdges(planned);
  details.push(...swaps(moves, at));
  if (details.length) throw invalid(details);

  return changesOf(planned, applyOrder(planned, edges, moves));
}

/** Entries whose references lead back to them. */
function cycles(edges: number[][], field: (i: number) => string): ErrorDetail[] {
  return edges.flatMap((out, i) =>
    out.some((j) => reaches((k) => edges[k]!, j, i))
      ? [detail(field(i), 'circular_reference', 'Its references lead back to it.')]
      : [],
  );
}

/**
 * The order changes apply in: tags, products, groups, modules (a parent before its children),
 * access schedules, deliveries, webhooks, Diamond automations.
 */
const RANK: Record<PlanType, number> = {
  tag: 0,
  product: 1,
  module: 3,
  access_schedule: 4,
  delivery: 5,
  webhook: 6,
  diamond: 7,
};
const rank = (type: PlanType, values: Record<string, unknown>) =>
  type === 'module' && values.kind === 'group' ? 2 : RANK[type];

/** Within one rank, updates before creations: a name or gateway id a rename frees is free. */
const phase = (id: number | null) => (id === null ? 1 : 0);

/** Deliveries and Diamond automations have no DELETE route: archived, or never pruned. */
export const PRUNED: PlanType[] = PLAN_TYPES.filter((t) => t !== 'diamond');

/**
 * The entries in the order their changes apply: by rank and phase, except that an entry waits for
 * what it references and for the entries that free a value it takes (./moves.ts). Neither waits
 * on a cycle: references and moves were checked for cycles before.
 */
function applyOrder({ typed, desired, existing }: Planned, refs: number[][], moves: Move[][]) {
  const key = typed.map((e, i) => [rank(e.type, desired[i]!), phase(existing[i]!), i] as const);
  const before = (a: number, b: number) =>
    key[a]![0] - key[b]![0] || key[a]![1] - key[b]![1] || a - b;
  const waiting = typed.map((_, i) => new Set([...refs[i]!, ...moves[i]!.map((m) => m.after)]));
  const freed: number[][] = typed.map(() => []);
  waiting.forEach((ws, i) => ws.forEach((j) => freed[j]!.push(i)));
  // Ready entries, kept sorted: the first is the next change.
  const ready: number[] = [];
  const add = (i: number) => {
    let lo = 0;
    let hi = ready.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (before(ready[mid]!, i) < 0) lo = mid + 1;
      else hi = mid;
    }
    ready.splice(lo, 0, i);
  };
  typed.forEach((_, i) => waiting[i]!.size === 0 && add(i));
  const order: number[] = [];
  while (ready.length) {
    const i = ready.shift()!;
    order.push(i);
    for (const k of freed[i]!) {
      waiting[k]!.delete(i);
      if (waiting[k]!.size === 0) add(k);
    }
  }
  return order;
}

function changesOf({ typed, desired, existing, state, prune }: Planned, order: number[]): Change[] {
  const changes: Change[] = order.map((i) => {
    const e = typed[i]!;
    const d = desired[i]!;
    const product =
      'product_id' in d && e.type !== 'delivery' ? productOf(d.product_id) : undefined;
    const input = { ...d };
    if (product !== undefined) delete input.product_id;
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
      if (!same(current.values[k], to, e.type, k))
        fields[k] = { from: current.values[k] ?? null, to };
    const changed = Object.fromEntries(Object.keys(fields).map((k) => [k, input[k]]));
    // The service reads a duration with its unit: one sent, both sent.
    if (e.type === 'delivery' && ('duration' in fields || 'duration_unit' in fields))
      Object.assign(changed, { duration: d.duration, duration_unit: d.duration_unit });
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

  // Deletions last, dependants before what they depend on: the reverse order of creation.
  const named = new Set(typed.map((e, i) => `${e.type}#${existing[i]}`));
  const keyOf = new Map([...state.keys].map(([k, id]) => [`${k.split('.')[0]}#${id}`, k]));
  const deletions: (Change & { r: number })[] = [];
  for (const type of PRUNED)
    for (const current of state.resources[type].values()) {
      const c = `${type}#${current.id}`;
      if (named.has(c)) continue;
      const remembered = keyOf.get(c);
      const parent = type === 'module' || type === 'access_schedule';
      deletions.push({
        action: 'delete',
        type,
        key: remembered ? remembered.slice(type.length + 1) : `${type}-${current.id}`,
        id: current.id,
        revision: current.revision,
        fields: {},
        input: {},
        product: parent ? Number(current.values.product_id) : undefined,
        r: rank(type, current.values),
      });
    }
  deletions.sort((a, b) => b.r - a.r || a.id! - b.id!);
  return [...changes, ...deletions.map(({ r: _r, ...c }) => c)];
}

const productOf = (v: unknown): number | Ref => (isRef(v) ? v : Number(v));
