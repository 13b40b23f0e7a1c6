// GET /manifest: the configuration as a manifest. Each resource carries its id (so planning the
// manifest adopts it) and the key a plan remembered for it, else `<type>-<id>`. What it names
// that is an entry of the manifest is a reference to that entry (a module's product and group,
// an access schedule's product, a delivery's products, schedules and tags); anything else (a
// schedule's tag, a product's default schedule, which need none) stays an id.
import { sitesOf } from './refs.ts';
import type { State } from './state.ts';
import { PLAN_TYPES, type Manifest, type ManifestEntry, type PlanType } from './types.ts';

export function manifestOf(state: State): Manifest {
  const keyOf = new Map<string, string>();
  for (const [k, id] of state.keys) {
    const dot = k.indexOf('.');
    keyOf.set(`${k.slice(0, dot)}#${id}`, k.slice(dot + 1));
  }
  const key = (type: PlanType, id: number | string) =>
    keyOf.get(`${type}#${id}`) ?? `${type}-${id}`;
  const resources: ManifestEntry[] = [];
  for (const type of PLAN_TYPES) {
    const all = [...state.resources[type].values()];
    // Groups before modules, so a reader meets a parent before its children.
    if (type === 'module')
      all.sort((a, b) => Number(a.values.kind !== 'group') - Number(b.values.kind !== 'group'));
    for (const r of all) {
      const properties = mapIds(type, r.values, (to, id) =>
        state.resources[to].has(Number(id)) ? { ref: `${to}.${key(to, id)}` } : id,
      );
      resources.push({ type, key: key(type, r.id), id: String(r.id), properties });
    }
  }
  return { version: 1, prune: false, resources };
}

/** The values with each id a reference may stand for replaced by `f(type, id)`. */
function mapIds(
  type: PlanType,
  values: Record<string, unknown>,
  f: (to: PlanType, id: string) => unknown,
): Record<string, unknown> {
  const copy = structuredClone(values);
  for (const s of sitesOf(type, copy)) {
    const v = s.holder[s.key];
    if (typeof v === 'string') s.holder[s.key] = f(s.rule.to, v);
  }
  return copy;
}
