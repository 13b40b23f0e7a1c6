// sandbox.scenario (its own route only): one item of a scenario, its reset or one part of its data.
import type { Tx } from '../db/engine.ts';
import type { BatchType } from '../domain/operations/batch-types.ts';

export function sandboxScenario(
  load: (
    tx: Tx,
    accountId: number,
    payload: any,
    operationId: number,
  ) => Promise<Record<string, unknown>>,
): BatchType {
  return {
    permission: 'sandbox.manage',
    // The reset and the scenario's parts (school_1000 has 1,001).
    maxItems: 1100,
    internal: true,
    apply: (tx, accountId, payload, ctx) => load(tx, accountId, payload, ctx.operationId),
  };
}
