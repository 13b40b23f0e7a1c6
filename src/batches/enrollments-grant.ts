// enrollments.grant: grants a student access to a product (creates or renews).
import type { Tx } from '../db/engine.ts';
import type { BatchType } from '../domain/operations/batch-types.ts';
import { toId } from '../domain/shared/ids.ts';

export function enrollmentsGrant(
  grant: (
    tx: Tx,
    accountId: number,
    payload: any,
  ) => Promise<{ enrollment: { id: number }; created: boolean }>,
): BatchType {
  return {
    permission: 'enrollments.write',
    maxItems: 1000,
    async apply(tx, accountId, payload) {
      const { enrollment, created } = await grant(tx, accountId, payload);
      return { enrollment_id: toId(enrollment.id), created };
    },
  };
}
