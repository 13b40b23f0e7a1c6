// GET /manifest: the configuration as a manifest. Each resource carries its id (so planning the
// manifest adopts it) and the key a plan remembered for it, else `<type>-<id>`; a module names its
// product and group by reference to their entries.
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
      const properties = { ...r.values };
      if (type === 'module') {
        properties.product_id = { ref: `product.${key('product', String(r.values.product_id))}` };
        if (r.values.parent_id !== null)
          properties.parent_id = { ref: `module.${key('module', String(r.values.parent_id))}` };
      }
      resources.push({ type, key: key(type, r.id), id: String(r.id), properties });
    }
  }
  return { version: 1, prune: false, resources };
}
