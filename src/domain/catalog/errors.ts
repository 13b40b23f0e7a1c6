// The catalog's business rejections, each with a `reason` in details so clients can tell cases
// apart without parsing messages.
import { AppError, type ErrorDetail } from '../../errors.ts';

const MAX_DETAILS = 100;

/** A copy in a replica account: only `status` may change; `fields` lists what was refused. */
export const replicaReadonly = (fields: string[] = []) =>
  new AppError('replica_readonly', {
    details: (fields.length ? fields : [undefined]).map((field) => ({
      ...(field ? { field } : {}),
      code: 'replica_readonly',
      message: 'This record is a copy of another account\u2019s record: only status can change.',
      reason: 'replica_copy',
    })),
  });

export type HierarchyReason =
  'parent_not_found' | 'parent_not_group' | 'parent_in_trash' | 'group_not_top_level';

const HIERARCHY_MESSAGES: Record<HierarchyReason, string> = {
  parent_not_found: 'No group of this product has this id.',
  parent_not_group: 'Only a group can hold modules.',
  parent_in_trash: 'The group is in the trash: restore it first.',
  group_not_top_level: 'Groups stay at the top level: a group cannot be inside another group.',
};

export const hierarchyViolation = (reason: HierarchyReason, field = 'parent_id') =>
  new AppError('hierarchy_violation', {
    details: [{ field, code: 'hierarchy_violation', message: HIERARCHY_MESSAGES[reason], reason }],
  });

/** The reorder list against the scope: what is missing, what does not belong, what repeats. */
export function orderSetMismatch(expected: number[], given: string[]): AppError {
  const want = new Set(expected.map(String));
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  const add = (reason: string, message: string) =>
    details.push({ field: 'module_ids', code: 'order_set_mismatch', message, reason });
  for (const id of given) {
    if (!want.has(id)) add('unexpected', `${id} is not a module of this parent outside the trash.`);
    else if (seen.has(id)) add('duplicate', `${id} is listed more than once.`);
    seen.add(id);
  }
  for (const id of want) if (!seen.has(id)) add('missing', `${id} is missing.`);
  return new AppError('order_set_mismatch', { details: details.slice(0, MAX_DETAILS) });
}

export type ConflictReason = 'default_schedule' | 'schedule_in_use' | 'in_trash';

const CONFLICT_MESSAGES: Record<ConflictReason, string> = {
  default_schedule: 'The default access schedule cannot go to the trash.',
  schedule_in_use: 'An active delivery uses this access schedule.',
  in_trash: 'The record is in the trash: restore it (deleted: false) first.',
};

export const stateConflict = (reason: ConflictReason) =>
  new AppError('state_conflict', {
    details: [{ code: 'state_conflict', message: CONFLICT_MESSAGES[reason], reason }],
  });
