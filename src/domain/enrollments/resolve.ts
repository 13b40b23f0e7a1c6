// Turns a request's ids and duration into a Grant, checking each against the account: a student,
// product or schedule it lacks is 422 validation_failed naming the field.
import type { Tx } from '../../db/knex.ts';
import { isAppError } from '../../errors.ts';
import { fromId } from '../shared/ids.ts';
import { usersRepo } from '../users/repo.ts';
import { productsRepo } from '../catalog/repo.ts';
import { parseDuration } from './duration.ts';
import { fieldError } from '../shared/rejections.ts';
import { enrollmentsRepo as repo } from './repo.ts';
import type { EnrollmentInput, Grant } from './types.ts';

const notFound = (field: string, what: string) =>
  fieldError(field, 'not_found', `No ${what} of this account has this id.`, 'not_found');

function instant(field: string, v: string): string {
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) throw fieldError(field, 'invalid_format', 'Must be a date-time.');
  return new Date(ms).toISOString();
}

export async function resolveGrant(
  { tx }: { tx: Tx },
  accountId: number,
  input: EnrollmentInput,
): Promise<Grant> {
  const userId = fromId(input.user_id);
  const user = userId === null ? null : await usersRepo.get({ tx }, accountId, userId);
  if (!user) throw notFound('user_id', 'student');
  const productId = fromId(input.product_id);
  const product = productId === null ? null : await productsRepo.get({ tx }, accountId, productId);
  if (!product) throw notFound('product_id', 'product');
  return {
    userId: user.id,
    productId: product.id,
    accessScheduleId:
      input.access_schedule_id === undefined
        ? null
        : await scheduleOf({ tx }, product.id, input.access_schedule_id),
    duration: parseDuration(input),
    startedAt: input.started_at === undefined ? undefined : instant('started_at', input.started_at),
  };
}

/** A schedule of the product outside the trash (422 naming `access_schedule_id`). */
export async function scheduleOf(
  { tx }: { tx: Tx },
  productId: number,
  raw: string,
): Promise<number> {
  const id = fromId(raw);
  const s = id === null ? null : await repo.schedule({ tx }, productId, id);
  if (!s) throw notFound('access_schedule_id', 'access schedule of the product');
  if (s.deleted)
    throw fieldError(
      'access_schedule_id',
      'invalid',
      'The access schedule is in the trash.',
      'schedule_in_trash',
    );
  return s.id;
}

/**
 * resolveGrant for a chunk, with one read of the students, one of the products and one of the
 * schedules named. Null when an input would be refused (resolveGrant then says why, alone).
 */
export async function resolveGrants(
  { tx }: { tx: Tx },
  accountId: number,
  inputs: EnrollmentInput[],
): Promise<Grant[] | null> {
  const userIds = inputs.map((i) => fromId(i.user_id));
  const productIds = inputs.map((i) => fromId(i.product_id));
  const scheduleIds = inputs.map((i) =>
    i.access_schedule_id === undefined ? undefined : fromId(i.access_schedule_id),
  );
  if ([...userIds, ...productIds, ...scheduleIds].some((id) => id === null)) return null;
  const known = async (
    ids: (number | null | undefined)[],
    read: (ids: number[]) => Promise<{ id: number }[]>,
  ) =>
    new Set(
      (await read(ids.filter((id): id is number => typeof id === 'number'))).map((r) => r.id),
    );
  const users = await known(userIds, (ids) => usersRepo.getMany({ tx }, accountId, ids));
  const products = await known(productIds, (ids) => productsRepo.getMany({ tx }, accountId, ids));
  const schedules = await repo.schedules(
    { tx },
    scheduleIds.filter((id): id is number => typeof id === 'number'),
  );
  const out: Grant[] = [];
  try {
    for (const [i, input] of inputs.entries()) {
      const userId = userIds[i]!;
      const productId = productIds[i]!;
      const scheduleId = scheduleIds[i];
      if (!users.has(userId) || !products.has(productId)) return null;
      const s = scheduleId === undefined ? undefined : schedules.get(scheduleId!);
      if (s !== undefined && (s.productId !== productId || s.deleted)) return null;
      if (scheduleId !== undefined && s === undefined) return null;
      out.push({
        userId,
        productId,
        accessScheduleId: s?.id ?? null,
        duration: parseDuration(input),
        startedAt:
          input.started_at === undefined ? undefined : instant('started_at', input.started_at),
      });
    }
  } catch (err) {
    if (isAppError(err)) return null; // a duration or start that resolveGrant refuses
    throw err;
  }
  return out;
}
