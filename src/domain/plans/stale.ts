// Whether a plan still describes the account, checked before its application starts (409
// plan_stale otherwise, nothing applied): every resource it touches has the planned revision,
// nothing took a key, name or gateway id it creates, and, for a prune plan, no resource of a
// pruned type appeared that the plan would have had to delete.
import type { ErrorDetail } from '../../errors.ts';
import { PRUNED } from './planner.ts';
import { externalKey, revisions, type State } from './state.ts';
import type { Plan } from './types.ts';

export function staleness(plan: Plan, now: State): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  const stale = (field: string, code: string, message: string) =>
    out.push({ field, code, message });
  const revs = revisions(now);
  const planned = new Set(
    plan.changes.flatMap((c) => (c.id === null ? [] : [`${c.type}#${c.id}`])),
  );
  // Tags whose names the plan sets or keeps (a schedule's name is its tag's).
  const plannedTags = new Set<number>();
  for (const c of plan.changes)
    if (c.id !== null && c.type === 'tag') plannedTags.add(c.id);
    else if (c.id !== null && c.type === 'access_schedule')
      plannedTags.add(now.schedules.get(c.id)?.tagId ?? -1);

  for (const [i, c] of plan.changes.entries()) {
    const field = `changes.${i}`;
    if (c.id !== null && revs.get(`${c.type}#${c.id}`) !== c.revision) {
      stale(field, 'changed', `${c.type} ${c.id} changed since planning.`);
      continue;
    }
    if (c.id === null) {
      const taken = now.keys.get(`${c.type}.${c.key}`);
      if (taken !== undefined && revs.has(`${c.type}#${taken}`))
        stale(field, 'created', `${c.type}.${c.key} exists since planning.`);
    }
    const name = c.fields.name?.to;
    if ((c.type === 'tag' || c.type === 'access_schedule') && typeof name === 'string') {
      const holder = now.tagNames.get(name.toLowerCase());
      if (holder !== undefined && !plannedTags.has(holder))
        stale(field, 'name_taken', `A tag named ${name} exists since planning.`);
    }
    const ids = c.fields.external_ids?.to;
    if (c.type === 'delivery' && Array.isArray(ids)) {
      const gateway = c.input.gateway ?? now.resources.delivery.get(c.id!)?.values.gateway;
      for (const x of ids) {
        const owner = now.externalIds.get(externalKey(gateway, x));
        if (owner !== undefined && owner !== c.id && !planned.has(`delivery#${owner}`))
          stale(field, 'external_id_taken', `Another delivery listens to ${x} since planning.`);
      }
    }
  }
  if (plan.prune)
    for (const type of PRUNED)
      for (const id of now.resources[type].keys())
        if (!planned.has(`${type}#${id}`))
          stale(
            'changes',
            'created',
            `${type} ${id} exists since planning: this prune plan would have deleted it.`,
          );
  return out;
}
