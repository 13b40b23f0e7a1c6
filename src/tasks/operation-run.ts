// operation.run: runs (or goes on running) one operation's items.
import type { Task } from '../jobs/types.ts';
import type { OperationRunner } from '../domain/operations/runner.ts';

export const operationRun =
  (runner: OperationRunner): Task =>
  (payload: { operation_id: number }, ctx) =>
    runner.run(payload.operation_id, ctx);
