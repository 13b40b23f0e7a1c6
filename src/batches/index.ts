// Every operation type the runner knows, by name: those of POST /operations/batches and those
// started by their own routes (`internal`). One file per type, as the job types of src/tasks/.
import type { Clock } from '../clock.ts';
import type { Db } from '../db/engine.ts';
import type { EnrollmentsService } from '../domain/enrollments/service.ts';
import type { EventRecorder } from '../domain/events/types.ts';
import type { ExportsService } from '../domain/exports/service.ts';
import { EXPORT_USERS } from '../domain/exports/service.ts';
import { ANALYSIS, PROCESS } from '../domain/imports/service.ts';
import type { BatchTypes } from '../domain/operations/batch-types.ts';
import { PLAN_APPLY, type ApplyDeps } from '../domain/plans/apply.ts';
import type { FilesPort } from '../domain/shared/files-port.ts';
import type { TagsService } from '../domain/tags/service.ts';
import type { UsersService } from '../domain/users/service.ts';
import type { Tx } from '../db/engine.ts';
import { enrollmentsGrant } from './enrollments-grant.ts';
import { exportUsers } from './export-users.ts';
import { importAnalysis } from './import-analysis.ts';
import { importProcess } from './import-process.ts';
import { planApply } from './plan-apply.ts';
import { productPublishAll } from './product-publish-all.ts';
import { sandboxReset } from './sandbox-reset.ts';
import { sandboxScenario } from './sandbox-scenario.ts';
import { tagsAssign } from './tags-assign.ts';
import { usersUpsert } from './users-upsert.ts';
import { webhookReplay } from './webhook-replay.ts';

export interface BatchDeps {
  db: Db;
  clock: Clock;
  files: FilesPort;
  users: UsersService;
  tags: TagsService;
  enrollments: EnrollmentsService;
  /** Records an import chunk's events, in row order. */
  events: EventRecorder;
  exports: ExportsService;
  plans: ApplyDeps;
  publishProduct: Parameters<typeof productPublishAll>[0];
  replayDelivery: Parameters<typeof webhookReplay>[0];
  resetSandbox: (tx: Tx, accountId: number, operationId: number) => Promise<Record<string, number>>;
  loadScenario: Parameters<typeof sandboxScenario>[0];
}

export function batchTypes(d: BatchDeps): BatchTypes {
  return {
    'users.upsert': usersUpsert(d.users),
    'tags.assign': tagsAssign(d.tags),
    'product.publish_all': productPublishAll(d.publishProduct),
    'enrollments.grant': enrollmentsGrant(d.enrollments),
    'sandbox.reset': sandboxReset(d.resetSandbox),
    'sandbox.scenario': sandboxScenario(d.loadScenario),
    'webhook.replay': webhookReplay(d.replayDelivery),
    [ANALYSIS]: importAnalysis(d.db, d.clock, d.files),
    [PROCESS]: importProcess({
      users: d.users,
      tags: d.tags,
      enrollments: d.enrollments,
      events: d.events,
    }),
    [EXPORT_USERS]: exportUsers(d.exports),
    [PLAN_APPLY]: planApply(d.plans),
  };
}
