// plan.apply (its own route only): one item per change of a plan, applied through the same
// services as the v3 routes (src/domain/plans/apply.ts).
import type { BatchType } from '../domain/operations/batch-types.ts';
import { applyChange, type ApplyDeps } from '../domain/plans/apply.ts';

export function planApply(deps: ApplyDeps): BatchType {
  return {
    permission: 'plans.write',
    // One item per change; prune may delete every resource of an account.
    maxItems: Number.MAX_SAFE_INTEGER,
    internal: true,
    apply: (tx, accountId, payload: { plan_id: number; change: number }) =>
      applyChange({ tx }, accountId, payload, deps),
  };
}
