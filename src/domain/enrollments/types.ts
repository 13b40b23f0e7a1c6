// An enrollment as the service hands it out (ended is derived with the clock), and its public
// shape: the v3 resource and the data of its events are the same object.
import { toId } from '../shared/ids.ts';
import type { Duration, DurationUnit } from './duration.ts';
import type { EnrollmentRow } from './repo.ts';

export type Enrollment = EnrollmentRow & {
  /** Ended on purpose, or past its `endsAt`. */
  ended: boolean;
};

export const withEnded = (row: EnrollmentRow, now: string): Enrollment => ({
  ...row,
  ended: row.endedFlag || (row.endsAt !== null && row.endsAt <= now),
});

export interface EnrollmentResource {
  object: 'enrollment';
  id: string;
  user_id: string;
  product_id: string;
  access_schedule_id: string;
  delivery_id: string | null;
  transaction_id: string | null;
  started_at: string;
  duration: number | null;
  duration_unit: DurationUnit;
  ends_at: string | null;
  ended: boolean;
  revision: string;
  created_at: string;
  updated_at: string;
}

export function enrollmentResource(e: Enrollment): EnrollmentResource {
  return {
    object: 'enrollment',
    id: String(e.id),
    user_id: String(e.userId),
    product_id: String(e.productId),
    access_schedule_id: String(e.accessScheduleId),
    delivery_id: toId(e.deliveryId),
    transaction_id: toId(e.transactionId),
    started_at: e.startedAt,
    duration: e.duration,
    duration_unit: e.durationUnit,
    ends_at: e.endsAt,
    ended: e.ended,
    revision: e.revision,
    created_at: e.createdAt,
    updated_at: e.updatedAt,
  };
}

/** The enrollment as its events carry it (spec/events/enrollment.*): the resource's fields. */
export function enrollmentSnapshot(e: Enrollment) {
  const { object: _object, revision: _revision, ...rest } = enrollmentResource(e);
  return rest;
}

export interface EnrollmentInput {
  user_id: string;
  product_id: string;
  /** The product's default schedule when absent. */
  access_schedule_id?: string;
  /** With `duration_unit` day, month or year; both absent (or unit `lifetime`): for life. */
  duration?: number | null;
  duration_unit?: DurationUnit;
  /** Now when absent (an import may carry the original start). */
  started_at?: string;
}

export interface EnrollmentUpdate {
  /** Only `true`: ends the access now. An ended enrollment is never reopened. */
  ended?: boolean;
  /** The new total length counted from `started_at` (extend or shorten). */
  duration?: number | null;
  duration_unit?: DurationUnit;
  access_schedule_id?: string;
}

export interface EnrollmentListQuery {
  sort?: 'created_at' | '-created_at';
  product_id?: string;
  ended?: boolean;
  limit?: number;
  cursor?: string;
}

/** What a sale (or a batch item) grants: resolved ids, no parsing. */
export interface Grant {
  userId: number;
  productId: number;
  /** The product's default schedule when null or absent. */
  accessScheduleId?: number | null;
  duration: Duration;
  deliveryId?: number | null;
  transactionId?: number | null;
  startedAt?: string;
}
