// sandbox.reset (its own route only): empties a sandbox account's data, all but the operation
// doing it.
import type { Tx } from '../db/engine.ts';
import type { BatchType } from '../domain/operations/batch-types.ts';

export function sandboxReset(
  reset: (tx: Tx, accountId: number, operationId: number) => Promise<Record<string, number>>,
): BatchType {
  return {
    permission: 'sandbox.manage',
    maxItems: 1,
    internal: true,
    apply: (tx, accountId, _payload, ctx) => reset(tx, accountId, ctx.operationId),
  };
}
