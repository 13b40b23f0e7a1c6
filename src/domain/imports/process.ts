// Applying one ready row of an import, in the transaction that records its operation item: the
// student found by email (created when new), then what the row's delivery grants, as an approved
// sale grants it (`active`), or the end of the access that delivery granted (`inactive`, as a
// refund ends it). The row is marked applied in the same transaction, guarded on "not applied
// yet", so a row is applied once whatever the attempts, resumes and crashed workers.
import type { Tx } from '../../db/engine.ts';
import { toId } from '../shared/ids.ts';
import { rejection } from '../shared/rejections.ts';
import { usersRepo } from '../users/repo.ts';
import type { UsersService } from '../users/service.ts';
import type { TagsService } from '../tags/service.ts';
import type { EnrollmentsService } from '../enrollments/service.ts';
import { importsRepo as repo } from './repo.ts';
import { deliveryGrant, deliveryIdByExternalId } from './deliveries.ts';

export interface RowDeps {
  users: UsersService;
  tags: TagsService;
  enrollments: EnrollmentsService;
}

export interface RowItem {
  import_id: number;
  attempt_id: number;
  row: number;
}

export async function applyRow(tx: Tx, accountId: number, item: RowItem, deps: RowDeps) {
  const row = await repo.row(tx, item.import_id, item.row);
  if (!row || row.status !== 'ready')
    throw rejection('state_conflict', 'row_not_ready', 'The row is no longer ready.');
  if (row.appliedAttemptId !== null)
    return { row: item.row, applied_by_attempt: toId(row.appliedAttemptId), skipped: true };
  // Looked up again: the delivery may have been archived since the analysis.
  const deliveryId = await deliveryIdByExternalId(tx, accountId, row.productExternalId!);
  const d = deliveryId === null ? null : await deliveryGrant(tx, deliveryId);
  if (!d)
    throw rejection(
      'domain_rule_violation',
      'product_unknown',
      'No active delivery listens to this product_external_id.',
    );
  const email = row.email!;
  let user = await usersRepo.findByEmail(tx, accountId, email.toLowerCase());
  let created = false;
  if (row.accessStatus === 'inactive') {
    if (user) await deps.enrollments.endForDelivery(tx, accountId, user.id, d.id);
  } else {
    if (!user) {
      user = await deps.users.create(accountId, { name: email.split('@')[0]!, email }, { tx });
      created = true;
    }
    const duration = { duration: d.duration, unit: d.durationUnit };
    for (const p of d.products)
      await deps.enrollments.grantAccess(tx, accountId, {
        userId: user.id,
        productId: p.productId,
        accessScheduleId: p.accessScheduleId,
        duration,
        deliveryId: d.id,
      });
    for (const tagId of d.tagIds) await deps.tags.assign(accountId, user.id, tagId, { tx });
  }
  if ((await repo.markApplied(tx, item.import_id, item.row, item.attempt_id)) === 0)
    throw new Error('row applied concurrently'); // rolls the item back; never expected
  await repo.countApplied(tx, item.import_id);
  return { row: item.row, user_id: toId(user?.id ?? null), created, delivery_id: toId(d.id) };
}
