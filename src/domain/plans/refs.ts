// Where a manifest entry names another resource: by id, or by a reference `{"ref": "type.key"}`
// to an entry of the same manifest. A path's `*` stands for every item of an array.
import { isRef, type PlanType, type Ref } from './types.ts';

export interface RefRule {
  path: string;
  to: PlanType;
  required?: boolean;
  /** A path parameter of the v3 route, not a property of its create schema. */
  param?: boolean;
}

export const REFERENCES: Partial<Record<PlanType, RefRule[]>> = {
  module: [
    { path: 'product_id', to: 'product', required: true, param: true },
    { path: 'parent_id', to: 'module' },
  ],
  access_schedule: [{ path: 'product_id', to: 'product', required: true, param: true }],
  delivery: [
    { path: 'products.*.product_id', to: 'product' },
    { path: 'products.*.access_schedule_id', to: 'access_schedule' },
    { path: 'tag_ids.*', to: 'tag' },
  ],
};

export interface Site {
  /** `products.0.product_id`. */
  path: string;
  rule: RefRule;
  holder: Record<string, unknown>;
  key: string;
}

/** Every place of `properties` a reference may stand (present or not, for `required` ones). */
export function sitesOf(type: PlanType, properties: Record<string, unknown>): Site[] {
  const out: Site[] = [];
  for (const rule of REFERENCES[type] ?? []) walk(properties, rule.path.split('.'), [], rule, out);
  return out;
}

function walk(obj: unknown, parts: string[], at: string[], rule: RefRule, out: Site[]) {
  if (!obj || typeof obj !== 'object') return;
  const [head, ...rest] = parts as [string, ...string[]];
  const keys = head === '*' ? (Array.isArray(obj) ? obj.map((_, i) => String(i)) : []) : [head];
  for (const key of keys) {
    if (rest.length) walk((obj as any)[key], rest, [...at, key], rule, out);
    else out.push({ path: [...at, key].join('.'), rule, holder: obj as any, key });
  }
}

/** `type.key` of a reference, split at the first dot (keys may hold dots). */
export function refTarget(r: Ref): { type: string; key: string } | null {
  const dot = r.ref.indexOf('.');
  return dot > 0 ? { type: r.ref.slice(0, dot), key: r.ref.slice(dot + 1) } : null;
}

/** Replaces every reference in `properties` (a copy) by what `f` makes of it. */
export function mapRefs(
  type: PlanType,
  properties: Record<string, unknown>,
  f: (v: Ref, rule: RefRule) => unknown,
): Record<string, unknown> {
  const copy = structuredClone(properties);
  for (const s of sitesOf(type, copy)) {
    const v = s.holder[s.key];
    if (isRef(v)) s.holder[s.key] = f(v, s.rule);
  }
  return copy;
}

/** mapRefs with an asynchronous `f`, applied one reference after another (one transaction). */
export async function mapRefsAsync(
  type: PlanType,
  properties: Record<string, unknown>,
  f: (v: Ref, rule: RefRule) => Promise<unknown>,
): Promise<Record<string, unknown>> {
  const copy = structuredClone(properties);
  for (const s of sitesOf(type, copy)) {
    const v = s.holder[s.key];
    if (isRef(v)) s.holder[s.key] = String(await f(v, s.rule));
  }
  return copy;
}
