// What a plan must respect across resources, as the services would enforce it when applied:
// module hierarchy, properties no route changes, tag names (tags and access schedules share
// them), gateway product ids (one delivery each), what a delivery grants. Each problem is a
// detail at its path in the manifest.
import type { ErrorDetail } from '../../errors.ts';
import { fromId } from '../shared/ids.ts';
import { externalKey, type State } from './state.ts';
import { isRef, type ManifestEntry, type PlanType } from './types.ts';

export const detail = (field: string, code: string, message: string): ErrorDetail => ({
  field,
  code,
  message,
});

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

/** Lists a service stores as sets (its own order, each once). */
const UNORDERED: Partial<Record<PlanType, string[]>> = {
  delivery: ['external_ids', 'products', 'tag_ids'],
};

export function same(a: unknown, b: unknown, type?: PlanType, field?: string): boolean {
  if (type && field && UNORDERED[type]?.includes(field) && Array.isArray(a) && Array.isArray(b)) {
    const sorted = (xs: unknown[]) => xs.map(canonical).sort();
    return canonical(sorted(a)) === canonical(sorted(b));
  }
  return canonical(a ?? null) === canonical(b ?? null);
}

/** The values a service stores for these properties (names trimmed, a blank description none). */
export function normalize(
  type: PlanType,
  props: Record<string, unknown>,
  state: State,
): Record<string, unknown> {
  const out = { ...props };
  if (typeof out.name === 'string') out.name = out.name.trim();
  if ((type === 'product' || type === 'webhook') && 'description' in out)
    out.description = (typeof out.description === 'string' && out.description.trim()) || null;
  if (Array.isArray(out.event_types)) out.event_types = [...new Set(out.event_types)];
  if (type === 'diamond' && Array.isArray(out.stages))
    out.stages = out.stages.map((s: any) => ({ ...s, name: String(s.name).trim() }));
  if (type === 'delivery') {
    if (Array.isArray(out.external_ids))
      out.external_ids = [
        ...new Set(out.external_ids.map((s) => String(s).trim()).filter(Boolean)),
      ];
    if (Array.isArray(out.tag_ids)) out.tag_ids = unique(out.tag_ids);
    // A grant under the product's default schedule is shown without the schedule's id.
    if (Array.isArray(out.products))
      out.products = out.products.map((p: any) => {
        const product = fromId(p.product_id);
        const schedule = fromId(p.access_schedule_id);
        if (product === null || schedule === null || state.defaults.get(product) !== schedule)
          return p;
        return { product_id: p.product_id };
      });
    if ('duration' in out || 'duration_unit' in out) {
      const unit = out.duration_unit ?? 'lifetime';
      out.duration_unit = unit;
      out.duration = unit === 'lifetime' ? null : (out.duration ?? null);
    }
  }
  return out;
}

const unique = (xs: unknown[]) => {
  const seen = new Set<string>();
  return xs.filter((x) => !seen.has(canonical(x)) && !!seen.add(canonical(x)));
};

/** Properties set only at creation: the services offer no way to change them. */
const IMMUTABLE: Partial<Record<PlanType, string[]>> = {
  module: ['product_id', 'kind'],
  access_schedule: ['product_id'],
  delivery: ['gateway'],
  webhook: ['payload_version'],
  diamond: ['name', 'stages'],
};

const IMMUTABLE_WHY: Partial<Record<PlanType, string>> = {
  diamond:
    'A Diamond automation cannot change (no route changes one): give the entry a new key to create another.',
};

export interface Planned {
  typed: (ManifestEntry & { type: PlanType })[];
  desired: Record<string, unknown>[];
  existing: (number | null)[];
  byKey: Map<string, number>;
  state: State;
  at: (i: number) => string;
  prune: boolean;
}

export function crossRules(p: Planned): ErrorDetail[] {
  return [...hierarchy(p), ...immutable(p), ...tagNames(p), ...externalIds(p), ...grants(p)];
}

/** Modules: groups only at the top level, a parent is a group of the same product. */
function hierarchy({ typed, desired, byKey, state, at }: Planned): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  typed.forEach((e, i) => {
    if (e.type !== 'module') return;
    const d = desired[i]!;
    const parent = e.properties.parent_id;
    if (parent === undefined || parent === null) return;
    if (isRef(parent) && byKey.get(parent.ref) === i) return;
    const field = `${at(i)}.properties.parent_id`;
    if (d.kind === 'group') {
      out.push(detail(field, 'hierarchy_violation', 'A group is only at the top level.'));
      return;
    }
    const p = isRef(parent)
      ? desired[byKey.get(parent.ref)!]!
      : state.resources.module.get(fromId(parent as string)!)!.values;
    if (p.kind !== 'group')
      out.push(detail(field, 'hierarchy_violation', 'The parent must be a group.'));
    else if (!same(p.product_id, d.product_id))
      out.push(detail(field, 'hierarchy_violation', 'The parent is of another product.'));
  });
  return out;
}

function immutable({ typed, desired, existing, state, at }: Planned): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  typed.forEach((e, i) => {
    const id = existing[i];
    if (id === null || id === undefined) return;
    const current = state.resources[e.type].get(id)!.values;
    for (const name of IMMUTABLE[e.type] ?? [])
      if (name in desired[i]! && !same(current[name], desired[i]![name]))
        out.push(
          detail(
            `${at(i)}.properties.${name}`,
            'immutable',
            IMMUTABLE_WHY[e.type] ?? `A ${e.type}'s ${name} cannot change.`,
          ),
        );
  });
  return out;
}

/**
 * Tag names are unique per account, ignoring case, and an access schedule's name is its tag's.
 * Once the plan is applied: tags and schedules of the manifest by their planned names, every
 * other tag as now (pruned ones too: deletions apply last). A product the plan creates gets a
 * default schedule named after it (a suffix when a tag has that name at its creation), after the
 * tags and before the schedules: its name is taken for the schedules the plan creates.
 */
function tagNames({ typed, desired, existing, state, at }: Planned): ErrorDetail[] {
  type Holder = { entry?: number; defaultOf?: number };
  const holders = new Map<string, Holder[]>();
  const add = (name: unknown, h: Holder) => {
    const k = String(name).toLowerCase();
    holders.set(k, [...(holders.get(k) ?? []), h]);
  };
  const planned = new Set<number>();
  const entries = (type: PlanType) => typed.flatMap((e, i) => (e.type === type ? [i] : []));
  for (const i of entries('tag')) {
    if (existing[i] !== null) planned.add(existing[i]!);
    add(desired[i]!.name, { entry: i });
  }
  for (const i of entries('access_schedule'))
    if (existing[i] !== null) planned.add(state.schedules.get(existing[i]!)!.tagId);
  for (const [name, id] of state.tagNames) if (!planned.has(id)) add(name, {});
  for (const i of entries('product'))
    if (existing[i] === null && !holders.has(String(desired[i]!.name).toLowerCase()))
      add(desired[i]!.name, { defaultOf: i });
  for (const i of entries('access_schedule')) add(desired[i]!.name, { entry: i });

  const out: ErrorDetail[] = [];
  for (const hs of holders.values()) {
    if (hs.length < 2) continue;
    const first = hs.find((h) => h.defaultOf !== undefined);
    for (const h of hs)
      if (h.entry !== undefined)
        out.push(
          detail(
            `${at(h.entry)}.properties.name`,
            'already_exists',
            first
              ? `The default access schedule of ${at(first.defaultOf!)} takes this name first.`
              : 'Another tag or access schedule has this name.',
          ),
        );
  }
  return out;
}

/** Each gateway product id is listened to by one delivery of the gateway (archived ones too). */
function externalIds({ typed, desired, existing, state, at }: Planned): ErrorDetail[] {
  const owners = new Map<string, { entry?: number; id?: number; index?: number }[]>();
  const own = (k: string, o: { entry?: number; id?: number; index?: number }) =>
    owners.set(k, [...(owners.get(k) ?? []), o]);
  const planned = new Set<number>();
  typed.forEach((e, i) => {
    if (e.type !== 'delivery') return;
    const id = existing[i];
    const current = id === null ? undefined : state.resources.delivery.get(id!)!.values;
    if (id !== null) planned.add(id!);
    const gateway = desired[i]!.gateway ?? current?.gateway;
    const ids = (desired[i]!.external_ids ?? current?.external_ids ?? []) as string[];
    ids.forEach((x, index) => own(externalKey(gateway, x), { entry: i, index }));
  });
  for (const [k, id] of state.externalIds) if (!planned.has(id)) own(k, { id });
  const out: ErrorDetail[] = [];
  for (const [k, os] of owners) {
    if (os.length < 2) continue;
    const externalId = k.slice(k.indexOf('\n') + 1);
    for (const o of os) {
      if (o.entry === undefined) continue;
      const other = os.find((x) => x !== o)!;
      const by = other.entry !== undefined ? at(other.entry) : `delivery ${other.id}`;
      const raw = typed[o.entry]!.properties.external_ids;
      const index = Array.isArray(raw) ? raw.findIndex((x) => String(x).trim() === externalId) : -1;
      out.push(
        detail(
          `${at(o.entry)}.properties.external_ids${index >= 0 ? `.${index}` : ''}`,
          'already_exists',
          `${externalId} is listened to by another delivery of this gateway (${by}).`,
        ),
      );
    }
  }
  return out;
}

/**
 * A delivery grants each product once, under a schedule of that product; and nothing it grants or
 * gives once the plan is applied may be what this prune plan deletes (the grant would vanish with
 * it, or the schedule be trashed under it): `pruned`, at the grant or the tag.
 */
function grants({ typed, desired, existing, byKey, state, at, prune }: Planned): ErrorDetail[] {
  const named = new Set(typed.map((e, i) => `${e.type}#${existing[i]}`));
  const pruned = (type: PlanType, v: unknown) =>
    prune &&
    typeof v === 'string' &&
    state.resources[type].has(Number(v)) &&
    !named.has(`${type}#${Number(v)}`);
  const out: ErrorDetail[] = [];
  typed.forEach((e, i) => {
    if (e.type !== 'delivery') return;
    const current = existing[i] === null ? {} : state.resources.delivery.get(existing[i]!)!.values;
    const d = desired[i]!;
    // Lists the entry leaves out keep their value: the rules hold for those too.
    const path = (name: string, rest: string) =>
      `${at(i)}.properties.${name}${name in d ? rest : ''}`;
    const products = (d.products ?? current.products ?? []) as any[];
    const seen: string[] = [];
    products.forEach((g, k) => {
      const pField = path('products', `.${k}.product_id`);
      const product = canonical(g.product_id);
      if (seen.includes(product))
        out.push(detail(pField, 'duplicate', 'This product is listed twice.'));
      seen.push(product);
      if (pruned('product', g.product_id))
        out.push(detail(pField, 'pruned', 'This prune plan deletes this product.'));
      const s = g.access_schedule_id;
      if (s === undefined) return;
      const sField = path('products', `.${k}.access_schedule_id`);
      const ofProduct = isRef(s)
        ? same(desired[byKey.get(s.ref)!]!.product_id, g.product_id)
        : !isRef(g.product_id) &&
          state.schedules.get(Number(s))?.productId === Number(g.product_id);
      if (!ofProduct)
        out.push(detail(sField, 'not_found', 'No access schedule of this product has this id.'));
      else if (pruned('access_schedule', s))
        out.push(detail(sField, 'pruned', 'This prune plan trashes this access schedule.'));
    });
    ((d.tag_ids ?? current.tag_ids ?? []) as unknown[]).forEach((tag, k) => {
      if (pruned('tag', tag))
        out.push(detail(path('tag_ids', `.${k}`), 'pruned', 'This prune plan deletes this tag.'));
    });
  });
  return out;
}
