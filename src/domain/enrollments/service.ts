// Enrollments: a student's access to a product, under one of the product's access schedules (its
// default one unless told), for a duration counted from `started_at` or for life. Takes an account
// id (like UsersService) so the batch type, the postbacks and the legacy v1/v2 routes share the
// use cases. A new enrollment writes a welcome email to the outbox in the same transaction.
import { inTransaction } from '../../db/tx.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import type { PageResult } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { AppError } from '../../errors.ts';
import { fromId } from '../shared/ids.ts';
import { guardedWrite } from '../shared/revision.ts';
import { usersRepo, type User } from '../users/repo.ts';
import { productsRepo } from '../catalog/repo.ts';
import type { Product } from '../catalog/types.ts';
import type { OutboxService } from '../outbox/service.ts';
import { addDuration, parseDuration } from './duration.ts';
import { fieldError, rejection } from '../shared/rejections.ts';
import { noEvents, recordAll, type EventRecorder } from '../events/types.ts';
import { enrollmentsRepo as repo, type EnrollmentFields, type EnrollmentRow } from './repo.ts';
import {
  enrollmentSnapshot,
  withEnded,
  type Enrollment,
  type EnrollmentInput,
  type EnrollmentListQuery,
  type EnrollmentUpdate,
  type Grant,
} from './types.ts';
import { extendedBy, newEnrollment, welcomeEmail } from './rules.ts';
import { resolveGrant, resolveGrants, scheduleOf } from './resolve.ts';
import { endManyUnrecorded, grantManyUnrecorded, type Granted } from './many.ts';

export type { EnrollmentInput, EnrollmentListQuery, EnrollmentUpdate, Grant } from './types.ts';
export type { Ended, Granted } from './many.ts';

export class EnrollmentsService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  private readonly outbox: OutboxService;
  private readonly events: EventRecorder;
  constructor(
    db: Db,
    clock: Clock,
    cursors: CursorCodec,
    outbox: OutboxService,
    events: EventRecorder = noEvents,
  ) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.outbox = outbox;
    this.events = events;
  }

  private now = () => this.clock.now().toISOString();
  private view = (row: EnrollmentRow) => withEnded(row, this.now());

  private async emit({ tx }: { tx: Tx }, type: string, e: Enrollment) {
    await this.events.record(
      { tx },
      {
        accountId: e.accountId,
        type,
        data: { enrollment: enrollmentSnapshot(e) },
      },
    );
  }

  async get(
    accountId: number,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<Enrollment> {
    const row = id === null ? null : await repo.get({ tx }, accountId, id);
    if (!row) throw new AppError('not_found');
    return this.view(row);
  }

  /** A student's enrollments (404 for a student who is not the account's). */
  async listForUser(
    accountId: number,
    userId: number | null,
    q: EnrollmentListQuery,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<PageResult<Enrollment>> {
    const user = userId === null ? null : await usersRepo.get({ tx }, accountId, userId);
    if (!user) throw new AppError('not_found');
    const productId = q.product_id === undefined ? undefined : fromId(q.product_id);
    const filters = { productId, ended: q.ended, now: this.now() };
    const page = await repo.page({ tx }, this.cursors, accountId, user.id, filters, q);
    return { rows: page.rows.map((r) => this.view(r)), page: page.page };
  }

  /** The student's enrollments granted by a sale or subscription with this gateway id (v2). */
  async listByExternalId(accountId: number, userId: number, externalId: string, tx = this.db) {
    const rows = await repo.byExternalId({ tx }, accountId, userId, externalId);
    return rows.map((r) => ({ enrollment: this.view(r.enrollment), transaction: r.transaction }));
  }

  /**
   * POST /enrollments: a new enrollment. 409 already_exists (reason `enrollment_current`) when the
   * student has a current one in the product: extend that one instead.
   */
  async create(accountId: number, input: EnrollmentInput, opts: { tx?: Tx } = {}) {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const g = await resolveGrant({ tx }, accountId, input);
      if (await repo.current({ tx }, g.userId, g.productId, this.now()))
        throw rejection(
          'already_exists',
          'enrollment_current',
          'The student has a current enrollment in this product: extend it instead.',
          'product_id',
        );
      return this.insert({ tx }, accountId, g);
    });
  }

  /**
   * The batch type `enrollments.grant`: like POST /enrollments, but a current enrollment in the
   * product is renewed by the duration (as a sale renews it) instead of refused.
   */
  async grant(accountId: number, input: EnrollmentInput, opts: { tx?: Tx } = {}) {
    return inTransaction(this.db, opts.tx, async (tx) =>
      this.grantAccess({ tx }, accountId, await resolveGrant({ tx }, accountId, input)),
    );
  }

  /**
   * Grants access in the caller's transaction: renews the student's current enrollment in the
   * product (its end moves by the duration; lifetime absorbs everything), or creates one.
   * A renewal records the delivery and transaction that renewed it.
   */
  async grantAccess(
    { tx }: { tx: Tx },
    accountId: number,
    g: Grant,
  ): Promise<{ enrollment: Enrollment; created: boolean }> {
    const cur = await repo.current({ tx }, g.userId, g.productId, this.now());
    if (!cur) return { enrollment: await this.insert({ tx }, accountId, g), created: true };
    const next = extendedBy(cur, g.duration);
    const changes: Partial<EnrollmentFields> = {
      duration: next.duration,
      durationUnit: next.unit,
      endsAt: next.endsAt,
    };
    if (g.deliveryId !== undefined) changes.deliveryId = g.deliveryId;
    if (g.transactionId !== undefined) changes.transactionId = g.transactionId;
    await repo.update({ tx }, cur.id, changes, this.now());
    const e = this.view((await repo.get({ tx }, accountId, cur.id))!);
    await this.emit({ tx }, 'enrollment.updated', e);
    return { enrollment: e, created: false };
  }

  /**
   * grantAccess for a chunk of grants, set-based (src/domain/enrollments/many.ts): the same
   * enrollments, emails and events, in grant order. With `record: false` the events are returned,
   * not recorded, for a caller that records them among its own in the order of its items. Null
   * when the chunk cannot go this way (nothing is kept then: the caller goes grant by grant).
   */
  async grantMany(
    { tx }: { tx: Tx },
    accountId: number,
    grants: Grant[],
    opts: { record?: boolean } = {},
  ): Promise<Granted[] | null> {
    const out = await grantManyUnrecorded({ tx }, accountId, grants, {
      outbox: this.outbox,
      now: this.now(),
    });
    if (out && opts.record !== false)
      await recordAll(
        this.events,
        tx,
        out.map((g) => g.event),
      );
    return out;
  }

  /**
   * grant() for a chunk of an enrollments.grant batch: the inputs resolved with one read per
   * table, then grantMany. Null when an input would fail (or the chunk cannot go set-based).
   */
  async grantInputs({ tx }: { tx: Tx }, accountId: number, inputs: EnrollmentInput[]) {
    const grants = await resolveGrants({ tx }, accountId, inputs);
    return grants && this.grantMany({ tx }, accountId, grants);
  }

  /** PATCH: end now, change the length (from started_at), or move to another schedule. */
  async update(
    accountId: number,
    id: number | null,
    input: EnrollmentUpdate,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<Enrollment> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const lengthChange = input.duration !== undefined || input.duration_unit !== undefined;
      // Ending an ended enrollment, and nothing else: nothing to write.
      const noop = (e: Enrollment) =>
        input.ended === true && e.endedFlag && Object.keys(input).length === 1;
      const ending = (e: Enrollment) => input.ended === true && !e.endedFlag;
      const e = await guardedWrite({
        load: () => this.get(accountId, id, { tx }),
        ifMatch,
        check: (e) => {
          if (input.ended === false)
            throw rejection(
              'invalid_transition',
              'cannot_reopen',
              'An enrollment cannot be reopened: grant a new one.',
              'ended',
            );
          if (e.endedFlag && (lengthChange || input.access_schedule_id !== undefined))
            throw rejection(
              'invalid_transition',
              'enrollment_ended',
              'This enrollment was ended: grant a new one.',
            );
          if (input.ended && lengthChange)
            throw fieldError(
              'ended',
              'invalid',
              'End an enrollment or change its length, not both.',
            );
        },
        write: async (e, guard) => {
          const now = this.now();
          const changes: Partial<EnrollmentFields> = {};
          if (lengthChange) {
            const d = parseDuration(input);
            changes.duration = d.duration;
            changes.durationUnit = d.unit;
            changes.endsAt = addDuration(e.startedAt, d);
          }
          if (input.access_schedule_id !== undefined)
            changes.accessScheduleId = await scheduleOf(
              { tx },
              e.productId,
              input.access_schedule_id,
            );
          if (ending(e)) {
            changes.endedFlag = true;
            if (e.endsAt === null || e.endsAt > now) changes.endsAt = now;
          }
          return noop(e) ? 1 : repo.update({ tx }, e.id, changes, now, guard);
        },
      });
      if (noop(e)) return e;
      const updated = this.view((await repo.get({ tx }, accountId, e.id))!);
      await this.emit({ tx }, ending(e) ? 'enrollment.ended' : 'enrollment.updated', updated);
      return updated;
    });
  }

  /**
   * Ends, in the caller's transaction, the student's current enrollments that a delivery granted
   * (a refund, a chargeback, a canceled subscription). Returns them.
   */
  async endForDelivery({ tx }: { tx: Tx }, accountId: number, userId: number, deliveryId: number) {
    const now = this.now();
    const out: Enrollment[] = [];
    for (const cur of await repo.currentOfDelivery({ tx }, userId, deliveryId, now)) {
      const changes: Partial<EnrollmentFields> = { endedFlag: true };
      if (cur.endsAt === null || cur.endsAt > now) changes.endsAt = now;
      await repo.update({ tx }, cur.id, changes, now);
      const e = this.view((await repo.get({ tx }, accountId, cur.id))!);
      await this.emit({ tx }, 'enrollment.ended', e);
      out.push(e);
    }
    return out;
  }

  /**
   * endForDelivery for many (student, delivery) pairs, its events returned, not recorded (the
   * caller records them in its own order); null when the chunk cannot go this way.
   */
  endManyForDelivery(
    { tx }: { tx: Tx },
    accountId: number,
    pairs: { userId: number; deliveryId: number }[],
  ) {
    return endManyUnrecorded({ tx }, accountId, pairs, this.now());
  }

  // ---- internals ----

  private async insert({ tx }: { tx: Tx }, accountId: number, g: Grant): Promise<Enrollment> {
    const now = this.now();
    const startedAt = g.startedAt ?? now;
    const scheduleId =
      g.accessScheduleId ?? (await repo.schedule({ tx }, g.productId, null))?.id ?? null;
    if (scheduleId === null) throw new AppError('internal_error');
    const id = await repo.insert({ tx }, newEnrollment(accountId, g, scheduleId, startedAt), now);
    const e = this.view((await repo.get({ tx }, accountId, id))!);
    const user = (await usersRepo.get({ tx }, accountId, g.userId)) as User;
    const product = (await productsRepo.get({ tx }, accountId, g.productId)) as Product;
    await this.outbox.queue({ tx }, welcomeEmail(accountId, user, product));
    await this.emit({ tx }, 'enrollment.created', e);
    return e;
  }
}
