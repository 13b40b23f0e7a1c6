// enrollments.grant: grants a student access to a product (creates or renews); on PostgreSQL a
// chunk goes set-based (EnrollmentsService.grantInputs), item by item when it cannot.
import type { BatchType } from '../domain/operations/batch-types.ts';
import type { EnrollmentsService } from '../domain/enrollments/service.ts';
import { toId } from '../domain/shared/ids.ts';

const result = ({ enrollment, created }: { enrollment: { id: number }; created: boolean }) => ({
  enrollment_id: toId(enrollment.id),
  created,
});

export function enrollmentsGrant(enrollments: EnrollmentsService): BatchType {
  return {
    permission: 'enrollments.write',
    maxItems: 1000,
    // PostgreSQL: ~15 round trips a chunk whatever its length (spec/DECISIONS.md).
    setChunk: 500,
    async apply(tx, accountId, payload) {
      return result(await enrollments.grant(accountId, payload, { tx }));
    },
    async applyMany(tx, accountId, payloads) {
      const out = await enrollments.grantInputs({ tx }, accountId, payloads);
      return out && out.map(result);
    },
  };
}
