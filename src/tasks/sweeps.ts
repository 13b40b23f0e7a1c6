// The retention sweeps: idempotency keys are forgotten after 48 hours, operations after their
// `expires_at` (30 days from creation), plans 30 days after creation.
import type { Task } from '../jobs/types.ts';
import type { IdempotencyService } from '../domain/idempotency/service.ts';
import type { OperationsService } from '../domain/operations/service.ts';
import type { PlansService } from '../domain/plans/service.ts';

export const sweepIdempotency =
  (idempotency: IdempotencyService): Task =>
  async () => {
    await idempotency.purgeExpired();
  };

export const sweepOperations =
  (operations: OperationsService): Task =>
  async () => {
    await operations.purgeExpired();
  };

export const sweepPlans =
  (plans: PlansService): Task =>
  async () => {
    await plans.purgeExpired();
  };
