// The arithmetic of renewals and the welcome email of a new enrollment.
import type { User } from '../users/repo.ts';
import type { Product } from '../catalog/types.ts';
import type { NewEmail } from '../outbox/service.ts';
import { addDuration, type Duration, type DurationUnit } from './duration.ts';
import type { EnrollmentRow } from './repo.ts';

const DAY_MS = 86_400_000;

/**
 * A current enrollment renewed by `d`: its end moves by `d` from where it was, and its duration
 * stays the total length counted from `started_at` (1 month + 1 month = 2 months; a year is 12
 * months; mixing days with months counts days). Lifetime on either side gives lifetime.
 */
export function extendedBy(
  e: EnrollmentRow,
  d: Duration,
): { duration: number | null; unit: DurationUnit; endsAt: string | null } {
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

export function welcomeEmail(accountId: number, user: User, product: Product): NewEmail {
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
