// operations.recover (every minute, and when a worker starts): a running operation whose lease ran
// out, or whose worker on this host died, is enqueued again and resumes at its first pending item.
import type { Db } from '../db/engine.ts';
import { transaction } from '../db/tx.ts';
import type { JobEngine, Task } from '../jobs/types.ts';
import type { OperationRunner } from '../domain/operations/runner.ts';
import { RUN_TASK } from '../domain/operations/service.ts';

export const operationsRecover =
  (db: Db, jobs: JobEngine, runner: OperationRunner): Task =>
  async () => {
    const ids = await runner.orphans();
    if (ids.length === 0) return;
    await transaction(db, async (tx) => {
      for (const id of ids) await jobs.enqueue({ tx }, RUN_TASK, { operation_id: id });
    });
  };
