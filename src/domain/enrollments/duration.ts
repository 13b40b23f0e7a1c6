// How long access lasts: a number of days, months or years, or for life. Months and years are
// calendar months in UTC; a day that the target month lacks becomes its last day (Jan 31 + 1
// month = Feb 28 or 29), as billing systems count them.
import { fieldError } from '../shared/rejections.ts';

export type DurationUnit = 'day' | 'month' | 'year' | 'lifetime';

export interface Duration {
  /** null for lifetime. */
  duration: number | null;
  unit: DurationUnit;
}

export const LIFETIME: Duration = { duration: null, unit: 'lifetime' };

/** The last instant a timestamp can name: RFC 3339 (and the event schemas) stop at year 9999. */
export const MAX_TIMESTAMP = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * The end of an access of `d` from `fromIso` (null for life). An end past year 9999 cannot be
 * written as a timestamp: 422 on `duration` (reason `ends_after_9999`), a business rejection, so a
 * batch item fails for good instead of as retryable.
 */
export function addDuration(fromIso: string, d: Duration): string | null {
  if (d.unit === 'lifetime' || d.duration === null) return null;
  const from = new Date(fromIso);
  let out: Date;
  if (d.unit === 'day') out = new Date(from.getTime() + d.duration * 86_400_000);
  else {
    const months = d.unit === 'month' ? d.duration : d.duration * 12;
    const y = from.getUTCFullYear();
    const m = from.getUTCMonth() + months;
    const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
    out = new Date(from);
    out.setUTCDate(1);
    out.setUTCFullYear(y, m, Math.min(from.getUTCDate(), lastDay));
  }
  if (!(out.getTime() <= MAX_TIMESTAMP))
    throw fieldError(
      'duration',
      'out_of_range',
      'The access would end after 9999-12-31T23:59:59Z: start it earlier or shorten it.',
      'ends_after_9999',
    );
  return out.toISOString();
}

/**
 * The duration a request asks for: `duration` with `duration_unit` day/month/year, or
 * `duration_unit: lifetime` (or neither: lifetime). `prefix` names the fields in errors.
 */
export function parseDuration(
  input: { duration?: number | null; duration_unit?: DurationUnit },
  prefix = '',
): Duration {
  const unit = input.duration_unit;
  const n = input.duration ?? null;
  if (unit === undefined || unit === 'lifetime') {
    if (n !== null)
      throw fieldError(
        `${prefix}duration`,
        'invalid',
        'A lifetime access has no duration; send duration_unit day, month or year.',
        'lifetime_has_no_duration',
      );
    return LIFETIME;
  }
  if (n === null)
    throw fieldError(`${prefix}duration`, 'required', `duration_unit ${unit} needs a duration.`);
  return { duration: n, unit };
}
