// Applying one ready row of an import, in the transaction that records its operation item: the
// student found by email (created when new), then what the row's delivery grants, as an approved
// sale grants it (`active`), or the end of the access that delivery granted (`inactive`, as a
// refund ends it). The row is marked applied in the same transaction, guarded on "not applied
// yet", so a row is applied once whatever the attempts, resumes and crashed workers.
import type { Tx } from '../../db/engine.ts';
import { toId } from '../shared/ids.ts';
import { rejection } from '../shared/rejections.ts';
import { usersRepo, type User } from '../users/repo.ts';
import type { UsersService } from '../users/service.ts';
import type { TagsService } from '../tags/service.ts';
import type { EnrollmentsService } from '../enrollments/service.ts';
import { recordAll, type EventRecorder, type NewEvent } from '../events/types.ts';
import { importsRepo as repo, type ImportRow } from './repo.ts';
import { deliveryGrant, deliveryIdByExternalId, type DeliveryGrant } from './deliveries.ts';

export interface RowDeps {
  users: UsersService;
  tags: TagsService;
  enrollments: EnrollmentsService;
  /** Records a set-based chunk's events, in row order. */
  events: EventRecorder;
}

export interface RowItem {
  import_id: number;
  attempt_id: number;
  row: number;
}

export async function applyRow(
  { tx }: { tx: Tx },
  accountId: number,
  item: RowItem,
  deps: RowDeps,
) {
  const row = await repo.row({ tx }, item.import_id, item.row);
  if (!row || row.status !== 'ready')
    throw rejection('state_conflict', 'row_not_ready', 'The row is no longer ready.');
  if (row.appliedAttemptId !== null)
    return { row: item.row, applied_by_attempt: toId(row.appliedAttemptId), skipped: true };
  // Looked up again: the delivery may have been archived since the analysis.
  const d = await grantOf({ tx }, accountId, row.productExternalId!);
  if (!d) throw unknownProduct();
  const email = row.email!;
  const user = await usersRepo.findByEmail({ tx }, accountId, email.toLowerCase());
  const out = await grant({ tx }, accountId, row, d, user, deps);
  if ((await repo.markApplied({ tx }, item.import_id, item.row, item.attempt_id)) === 0)
    throw new Error('row applied concurrently'); // rolls the item back; never expected
  await repo.countApplied({ tx }, item.import_id);
  return out;
}

/**
 * A chunk of rows of one attempt in one transaction (the runner's applyMany), set-based: the
 * rows, their deliveries, their students and the "applied" marks are read and written once per
 * chunk (grantChunk). Null (the runner then goes row by row, where a row that fails fails alone)
 * when a row is not ready or applied already, names an unknown product, shares its email with
 * another row of the chunk, or the set-based grants, tags or endings cannot decide.
 */
export async function applyRows(
  { tx }: { tx: Tx },
  accountId: number,
  items: RowItem[],
  deps: RowDeps,
) {
  const first = items[0]!;
  if (items.some((i) => i.import_id !== first.import_id || i.attempt_id !== first.attempt_id))
    return null;
  const numbers = items.map((i) => i.row);
  const rows = new Map(
    (await repo.rowsByNumber({ tx }, first.import_id, numbers)).map((r) => [r.row, r]),
  );
  const grants = new Map<string, DeliveryGrant | null>();
  const emails = new Set<string>();
  for (const n of numbers) {
    const row = rows.get(n);
    if (!row || row.status !== 'ready' || row.appliedAttemptId !== null) return null;
    const lower = row.email!.toLowerCase();
    if (emails.has(lower)) return null;
    emails.add(lower);
    const ext = row.productExternalId!;
    if (!grants.has(ext)) grants.set(ext, await grantOf({ tx }, accountId, ext));
    if (!grants.get(ext)) return null;
  }
  const users = new Map(
    (await usersRepo.findManyByEmail({ tx }, accountId, [...emails])).map((u) => [
      u.email.toLowerCase(),
      u,
    ]),
  );
  const chunk = numbers.map((n) => {
    const row = rows.get(n)!;
    return { row, d: grants.get(row.productExternalId!)!, user: users.get(lower(row)) ?? null };
  });
  const out = await grantChunk({ tx }, accountId, chunk, deps);
  if (!out) return null;
  if (
    (await repo.markManyApplied({ tx }, first.import_id, numbers, first.attempt_id)) !==
    numbers.length
  )
    throw new Error('rows applied concurrently'); // the chunk rolls back; never expected
  return out;
}

const lower = (row: ImportRow) => row.email!.toLowerCase();

type ChunkRow = { row: ImportRow; d: DeliveryGrant; user: User | null };

/**
 * A chunk's rows, set-based, as applyRow writes them row after row: the new students of the rows
 * that grant access in one insert, every such row's products through
 * EnrollmentsService.grantMany and its delivery's tags through TagsService.addMany, the `inactive`
 * rows' endings (of what their delivery granted a known student) through endManyForDelivery, and
 * the events in one go, in the order applyRow records them: row after row, user.created, then
 * each product's enrollment event, then each tag newly assigned; or each enrollment ended.
 */
async function grantChunk({ tx }: { tx: Tx }, accountId: number, chunk: ChunkRow[], deps: RowDeps) {
  const ending = (c: ChunkRow) => c.row.accessStatus === 'inactive';
  const fresh = chunk.filter((c) => !ending(c) && !c.user).map((c) => c.row.email!);
  const made = await deps.users.createMany(
    { tx },
    accountId,
    fresh.map((email) => ({ name: email.split('@')[0]!, email })),
  );
  if (!made) return null;
  const madeBy = new Map(made.map((m) => [m.user.email.toLowerCase(), m]));
  const plan = chunk.map((c) => ({
    row: c.row,
    d: c.d,
    ends: ending(c),
    // A row that ends access never creates its student (none: nothing to end).
    user: c.user ?? madeBy.get(lower(c.row))?.user ?? null,
    created: !c.user && !ending(c),
  }));
  const granting = plan.filter((p) => !p.ends);
  const granted = await deps.enrollments.grantMany(
    { tx },
    accountId,
    granting.flatMap(({ d, user }) =>
      d.products.map((p) => ({
        userId: user!.id,
        productId: p.productId,
        accessScheduleId: p.accessScheduleId,
        duration: { duration: d.duration, unit: d.durationUnit },
        deliveryId: d.id,
      })),
    ),
    { record: false },
  );
  if (!granted) return null;
  const tagged = await deps.tags.addMany(
    { tx },
    accountId,
    granting.flatMap(({ d, user }) => d.tagIds.map((tagId) => ({ userId: user!.id, tagId }))),
  );
  if (!tagged) return null;
  const endings = plan.filter((p) => p.ends && p.user);
  const ended = await deps.enrollments.endManyForDelivery(
    { tx },
    accountId,
    endings.map((p) => ({ userId: p.user!.id, deliveryId: p.d.id })),
  );
  if (!ended) return null;
  const events: NewEvent[] = [];
  let k = 0;
  let j = 0;
  let e = 0;
  for (const p of plan) {
    if (p.ends) {
      if (p.user) for (const one of ended[e++]!) events.push(one.event);
      continue;
    }
    if (p.created) events.push(madeBy.get(lower(p.row))!.event);
    for (let i = 0; i < p.d.products.length; i++) events.push(granted[k++]!.event);
    for (let i = 0; i < p.d.tagIds.length; i++) {
      const tag = tagged[j++];
      if (tag) events.push(tag);
    }
  }
  await recordAll(deps.events, tx, events);
  return plan.map((p) => ({
    row: p.row.row,
    user_id: toId(p.user?.id ?? null),
    created: p.created,
    delivery_id: toId(p.d.id),
  }));
}

const unknownProduct = () =>
  rejection(
    'domain_rule_violation',
    'product_unknown',
    'No active delivery listens to this product_external_id.',
  );

async function grantOf({ tx }: { tx: Tx }, accountId: number, externalId: string) {
  const deliveryId = await deliveryIdByExternalId({ tx }, accountId, externalId);
  return deliveryId === null ? null : deliveryGrant({ tx }, deliveryId);
}

/**
 * One row's effect: the student (created when new), then what the delivery grants, or the end of
 * what it granted.
 */
async function grant(
  { tx }: { tx: Tx },
  accountId: number,
  row: ImportRow,
  d: DeliveryGrant,
  found: User | null,
  deps: RowDeps,
) {
  const email = row.email!;
  let user = found;
  let created = false;
  if (row.accessStatus === 'inactive') {
    if (user) await deps.enrollments.endForDelivery({ tx }, accountId, user.id, d.id);
  } else {
    if (!user) {
      user = await deps.users.create(accountId, { name: email.split('@')[0]!, email }, { tx });
      created = true;
    }
    const duration = { duration: d.duration, unit: d.durationUnit };
    for (const p of d.products)
      await deps.enrollments.grantAccess({ tx }, accountId, {
        userId: user.id,
        productId: p.productId,
        accessScheduleId: p.accessScheduleId,
        duration,
        deliveryId: d.id,
      });
    for (const tagId of d.tagIds) await deps.tags.add(accountId, user.id, tagId, { tx });
  }
  return { row: row.row, user_id: toId(user?.id ?? null), created, delivery_id: toId(d.id) };
}
