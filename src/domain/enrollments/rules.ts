// The arithmetic of renewals and the welcome email of a new enrollment.
import type { User } from '../users/repo.ts';
import type { Product } from '../catalog/types.ts';
import type { NewEmail } from '../outbox/service.ts';
import { addDuration, type Duration, type DurationUnit } from './duration.ts';
import type { EnrollmentRow, NewEnrollment } from './repo.ts';
import type { Grant } from './types.ts';

const DAY_MS = 86_400_000;
/** The contract's maximum of an enrollment's `duration` (AccessDuration), in any unit. */
const MAX_UNITS = 36_500;

/**
 * A current enrollment renewed by `d`: its end moves by `d` from where it was, and its duration
 * stays the total length counted from `started_at` (1 month + 1 month = 2 months; a year is 12
 * months; mixing days with months counts days). Lifetime on either side gives lifetime.
 */
export function extendedBy(e: EnrollmentRow, d: Duration): Extended {
  const next = renewed(e, d);
  // Summed lengths can pass what the resource may state (a second sale of a 36,500-day delivery,
  // a common stand-in for "for life"): the total stops at the maximum, counted from started_at.
  // That end is never before the current one, and the sale is recorded, not refused.
  if (next.duration === null || next.duration <= MAX_UNITS) return next;
  const capped = { duration: MAX_UNITS, unit: next.unit };
  return { ...capped, endsAt: addDuration(e.startedAt, capped) };
}

type Extended = { duration: number | null; unit: DurationUnit; endsAt: string | null };

function renewed(e: EnrollmentRow, d: Duration): Extended {
  if (e.endsAt === null || e.durationUnit === 'lifetime' || d.unit === 'lifetime')
    return { duration: null, unit: 'lifetime', endsAt: null };
  const inMonths = (n: number, u: DurationUnit) => (u === 'year' ? n * 12 : n);
  if (e.durationUnit === d.unit)
    return {
      duration: e.duration! + d.duration!,
      unit: d.unit,
      endsAt: addDuration(e.startedAt, { duration: e.duration! + d.duration!, unit: d.unit }),
    };
  if (e.durationUnit !== 'day' && d.unit !== 'day') {
    const months = inMonths(e.duration!, e.durationUnit) + inMonths(d.duration!, d.unit);
    return {
      duration: months,
      unit: 'month',
      endsAt: addDuration(e.startedAt, { duration: months, unit: 'month' }),
    };
  }
  const endsAt = addDuration(e.endsAt, d)!;
  const days = Math.ceil((Date.parse(endsAt) - Date.parse(e.startedAt)) / DAY_MS);
  return { duration: days, unit: 'day', endsAt };
}

export function welcomeEmail(
  accountId: number,
  user: Pick<User, 'id' | 'email' | 'name'>,
  product: Pick<Product, 'name'>,
): NewEmail {
  return {
    accountId,
    userId: user.id,
    to: user.email,
    kind: 'enrollment.welcome',
    subject: `Welcome to ${product.name}`,
    body: [
      `Hello ${user.name},`,
      '',
      `You now have access to ${product.name}. Enjoy your studies!`,
    ].join('\n'),
  };
}

/** The enrollment a grant creates: from its start under its schedule, for its duration. */
export function newEnrollment(
  accountId: number,
  g: Grant,
  accessScheduleId: number,
  startedAt: string,
): NewEnrollment {
  return {
    accountId,
    userId: g.userId,
    productId: g.productId,
    accessScheduleId,
    deliveryId: g.deliveryId ?? null,
    transactionId: g.transactionId ?? null,
    startedAt,
    duration: g.duration.duration,
    durationUnit: g.duration.unit,
    endsAt: addDuration(startedAt, g.duration),
    endedFlag: false,
  };
}
