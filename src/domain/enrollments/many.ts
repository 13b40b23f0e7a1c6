// A chunk of grants at once (an enrollments.grant batch's chunk, an import's): the enrollments,
// welcome emails (and their jobs) and events that grantAccess writes grant after grant, in a fixed
// number of statements per chunk instead of ~10 per grant: one read of the current enrollments,
// one of the default schedules, one insert of the new ones, one update of the renewed ones (and a
// read back), one read of the students and products the emails name, one insert of the emails,
// one enqueue of their jobs. Null when the chunk cannot go this way; the caller then goes grant by
// grant, where a grant that fails fails alone.
import type { Tx } from '../../db/knex.ts';
import { isAppError } from '../../errors.ts';
import type { NewEvent } from '../events/types.ts';
import type { OutboxService } from '../outbox/service.ts';
import { usersRepo } from '../users/repo.ts';
import { productsRepo } from '../catalog/repo.ts';
import { enrollmentsRepo as repo, type EnrollmentFields, type NewEnrollment } from './repo.ts';
import { extendedBy, newEnrollment, welcomeEmail } from './rules.ts';
import { enrollmentSnapshot, withEnded, type Enrollment, type Grant } from './types.ts';

/** One grant's outcome and the event grantAccess records for it (not recorded yet). */
export interface Granted {
  enrollment: Enrollment;
  created: boolean;
  event: NewEvent;
}

/** A grant the set-based path leaves to grantAccess (no default schedule: it fails alone). */
class Undecided extends Error {}

export async function grantManyUnrecorded(
  { tx }: { tx: Tx },
  accountId: number,
  grants: Grant[],
  deps: { outbox: OutboxService; now: string },
): Promise<Granted[] | null> {
  const { now } = deps;
  const keys = grants.map((g) => `${g.userId}:${g.productId}`);
  // A second grant of one student and product renews what the first wrote: grant by grant.
  if (new Set(keys).size !== keys.length) return null;
  const current = await repo.currentMany({ tx }, grants, now);
  const needDefault = grants.filter(
    (g, i) => !current.has(keys[i]!) && (g.accessScheduleId ?? null) === null,
  );
  const defaults = await repo.defaultSchedules(
    { tx },
    needDefault.map((g) => g.productId),
  );
  const inserts: NewEnrollment[] = [];
  const updates: { id: number; revision: string; changes: Partial<EnrollmentFields> }[] = [];
  try {
    grants.forEach((g, i) => {
      const cur = current.get(keys[i]!);
      if (cur) {
        // As grantAccess: the end moves by the duration; the delivery and transaction given
        // replace the enrollment's (written whole: every row of the update has the same fields).
        const next = extendedBy(cur, g.duration);
        updates.push({
          id: cur.id,
          revision: cur.revision,
          changes: {
            duration: next.duration,
            durationUnit: next.unit,
            endsAt: next.endsAt,
            deliveryId: g.deliveryId !== undefined ? g.deliveryId : cur.deliveryId,
            transactionId: g.transactionId !== undefined ? g.transactionId : cur.transactionId,
          },
        });
        return;
      }
      const scheduleId = g.accessScheduleId ?? defaults.get(g.productId) ?? null;
      if (scheduleId === null) throw new Undecided();
      const startedAt = g.startedAt ?? now;
      inserts.push(newEnrollment(accountId, g, scheduleId, startedAt));
    });
  } catch (err) {
    // An end past year 9999 (a rejection of that grant) or a product without a default schedule.
    if (isAppError(err) || err instanceof Undecided) return null;
    throw err;
  }
  const inserted = await repo.insertMany({ tx }, inserts, now);
  // A renewed enrollment changed since it was read (a concurrent grant): nothing is kept.
  const renewed = await repo.updateMany({ tx }, updates, now);
  if (!renewed) return null;
  const users = new Map(
    (
      await usersRepo.getMany(
        { tx },
        accountId,
        inserts.map((e) => e.userId),
      )
    ).map((u) => [u.id, u]),
  );
  const products = new Map(
    (
      await productsRepo.getMany(
        { tx },
        accountId,
        inserts.map((e) => e.productId),
      )
    ).map((p) => [p.id, p]),
  );
  await deps.outbox.queueMany(
    { tx },
    inserted.map((e) => welcomeEmail(accountId, users.get(e.userId)!, products.get(e.productId)!)),
  );
  let n = 0;
  let r = 0;
  return grants.map((_, i) => {
    const created = !current.has(keys[i]!);
    const enrollment = withEnded(created ? inserted[n++]! : renewed[r++]!, now);
    const type = created ? 'enrollment.created' : 'enrollment.updated';
    const data = { enrollment: enrollmentSnapshot(enrollment) };
    return { enrollment, created, event: { accountId, type, data } };
  });
}

/** One ended enrollment and the enrollment.ended event endForDelivery records for it. */
export interface Ended {
  enrollment: Enrollment;
  event: NewEvent;
}

/**
 * endForDelivery for many (student, delivery) pairs (an import chunk's `inactive` rows), its
 * events not recorded: per pair, what it ended, in id order. One read of the current enrollments
 * and one update; null when one of them changed since it was read (a concurrent write: the
 * caller gives up its chunk).
 */
export async function endManyUnrecorded(
  { tx }: { tx: Tx },
  accountId: number,
  pairs: { userId: number; deliveryId: number }[],
  now: string,
): Promise<Ended[][] | null> {
  const current = await repo.currentOfDeliveries({ tx }, pairs, now);
  // A current enrollment's end is unset or later than now: ending it sets both, as endForDelivery.
  const ended = await repo.updateMany(
    { tx },
    current.map((cur) => ({
      id: cur.id,
      revision: cur.revision,
      changes: { endedFlag: true, endsAt: now },
    })),
    now,
  );
  if (!ended) return null;
  return pairs.map((p) =>
    ended
      .filter((r) => r.userId === p.userId && r.deliveryId === p.deliveryId)
      .map((row) => {
        const enrollment = withEnded(row, now);
        const data = { enrollment: enrollmentSnapshot(enrollment) };
        return { enrollment, event: { accountId, type: 'enrollment.ended', data } };
      }),
  );
}
