// Every job type the workers run, and the schedules of the periodic ones.
import type { Schedule, TaskList } from '../jobs/types.ts';
import type { Services } from '../services.ts';
import { operationRun } from './operation-run.ts';
import { operationsRecover } from './operations-recover.ts';
import { sweepIdempotency, sweepOperations, sweepPlans } from './sweeps.ts';
import { sweepEvents } from './sweep-events.ts';
import { deliverWebhook, recoverWebhooks } from './deliver-webhook.ts';
import { sweepAudit } from './sweep-audit.ts';
import { sendEmail } from './send-email.ts';
import { sweepUploads } from './sweep-uploads.ts';
import { sweepExports } from './sweep-exports.ts';
import { filesPurge } from './files-purge.ts';

export function taskList(s: Services): TaskList {
  return {
    'operation.run': operationRun(s.operationRunner),
    'operations.recover': operationsRecover(s.db, s.jobs, s.operationRunner),
    'sweep.idempotency': sweepIdempotency(s.idempotency),
    'sweep.operations': sweepOperations(s.operations),
    'sweep.plans': sweepPlans(s.plans),
    'sweep.events': sweepEvents(s.events),
    'webhook.deliver': deliverWebhook(s.webhookDispatcher),
    'webhooks.recover': recoverWebhooks(s.webhookDispatcher),
    'sweep.audit': sweepAudit(s),
    'email.send': sendEmail(s.outbox),
    'sweep.uploads': sweepUploads(s.uploads),
    'sweep.exports': sweepExports(s.exports),
    'files.purge': filesPurge(s.files),
  };
}

/**
 * Starts the workers of this process. Operations whose worker died are picked up at once (a worker
 * of this host that was killed is known dead by its pid), not at the next minute's recovery.
 */
export async function startWorkers(s: Services): Promise<void> {
  const tasks = taskList(s);
  await s.jobs.start(tasks, schedules);
  await operationsRecover(
    s.db,
    s.jobs,
    s.operationRunner,
  )(null, {
    jobId: 'start',
    attempt: 1,
    workerId: s.jobs.workerId,
    signal: new AbortController().signal,
  });
}

export const schedules: Schedule[] = [
  { task: 'operations.recover', everyMinutes: 1 },
  { task: 'sweep.idempotency', everyMinutes: 60 },
  { task: 'sweep.operations', everyMinutes: 60 },
  { task: 'sweep.plans', everyMinutes: 60 },
  { task: 'sweep.events', everyMinutes: 60 },
  { task: 'webhooks.recover', everyMinutes: 1 },
  { task: 'sweep.audit', everyMinutes: 60 },
  { task: 'sweep.uploads', everyMinutes: 60 },
  { task: 'sweep.exports', everyMinutes: 60 },
];
