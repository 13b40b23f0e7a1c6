// Values unique across resources (tag and access schedule names, one space ignoring case; a
// gateway's product ids) that a plan moves from one resource to another. Each change applies
// alone and the database refuses a duplicate at every step, so the change that gives a value up
// applies before the one that takes it (a chain of renames applies in order, whatever the ranks
// of their types). A cycle (two tags exchanging names) has no such order: the plan refuses it,
// rather than fail half-applied.
import type { ErrorDetail } from '../../errors.ts';
import { externalKey } from './state.ts';
import { detail, type Planned } from './rules.ts';

/** Entry i waits for entry `after`, which gives up the value i takes at `field`. */
export interface Move {
  after: number;
  field: string;
}

const lower = (v: unknown) => String(v).toLowerCase();

/** For each entry, the entries that must apply before it because they free what it takes. */
export function moveEdges({ typed, desired, existing, state, at }: Planned): Move[][] {
  const moves: Move[][] = typed.map(() => []);
  const currentOf = (i: number) =>
    existing[i] === null ? undefined : state.resources[typed[i]!.type].get(existing[i]!)?.values;

  // Names: what planned tags and schedules hold now and will not hold once applied.
  const names = new Map<string, number>();
  typed.forEach((e, i) => {
    if (e.type !== 'tag' && e.type !== 'access_schedule') return;
    const now = currentOf(i)?.name;
    if (now !== undefined && lower(now) !== lower(desired[i]!.name)) names.set(lower(now), i);
  });
  // Gateway product ids: likewise for planned deliveries.
  const ids = new Map<string, number>();
  const keysOf = (i: number, values: Record<string, unknown> | undefined) =>
    ((values?.external_ids ?? []) as string[]).map((x) =>
      externalKey(desired[i]!.gateway ?? values?.gateway, x),
    );
  typed.forEach((e, i) => {
    if (e.type !== 'delivery' || existing[i] === null) return;
    const kept = new Set(keysOf(i, { ...currentOf(i), ...desired[i] }));
    for (const k of keysOf(i, currentOf(i))) if (!kept.has(k)) ids.set(k, i);
  });

  typed.forEach((e, i) => {
    const now = currentOf(i);
    // A created product's default schedule is named after it: it takes that name too.
    const named = e.type === 'tag' || e.type === 'access_schedule' || e.type === 'product';
    if (named && (e.type !== 'product' || existing[i] === null)) {
      const want = lower(desired[i]!.name);
      const from = names.get(want);
      if (from !== undefined && from !== i && (now === undefined || lower(now.name) !== want))
        moves[i]!.push({ after: from, field: `${at(i)}.properties.name` });
    }
    if (e.type === 'delivery' && desired[i]!.external_ids !== undefined) {
      const had = new Set(keysOf(i, now));
      for (const k of keysOf(i, { ...now, ...desired[i] })) {
        const from = ids.get(k);
        if (from !== undefined && from !== i && !had.has(k))
          moves[i]!.push({ after: from, field: `${at(i)}.properties.external_ids` });
      }
    }
  });
  return moves;
}

/** Entries whose move leads back to them: an exchange no order of single changes can apply. */
export function swaps(moves: Move[][], at: (i: number) => string): ErrorDetail[] {
  const next = (i: number) => moves[i]!.map((m) => m.after);
  const out = new Map<string, ErrorDetail>();
  moves.forEach((ms, i) => {
    for (const m of ms)
      if (reaches(next, m.after, i) && !out.has(m.field))
        out.set(
          m.field,
          detail(
            m.field,
            'already_exists',
            `Exchanged with ${at(m.after)} in one plan: each change applies alone and the value ` +
              'is unique at every step. Move one of them to a temporary value in a first plan.',
          ),
        );
  });
  return [...out.values()];
}

/** Whether `to` is reached from `from` along `next` (references, moves). */
export function reaches(next: (i: number) => number[], from: number, to: number): boolean {
  const seen = new Set<number>();
  const stack = [from];
  while (stack.length) {
    const i = stack.pop()!;
    if (i === to) return true;
    if (seen.has(i)) continue;
    seen.add(i);
    stack.push(...next(i));
  }
  return false;
}
