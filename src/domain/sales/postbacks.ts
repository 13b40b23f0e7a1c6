// Gateway postbacks: POST {PUBLIC_BASE_URL}/postbacks/{delivery_id}/{token}. The URL's token and
// the delivery's secret (when it has one) authenticate the call; the gateway's parser normalizes
// the body; the transaction is recorded under the delivery's gateway as its `engine`, and access
// is granted, renewed or ended in the same database transaction. A repeat (same delivery, sale
// and status) records nothing and changes nothing. An archived delivery, or a sale of no product
// the delivery listens to, is recorded as `ignored` and grants nothing; the second is answered
// like any postback that does not apply (`ignored: not_applicable`), not by naming the product.
import { assertAccountActive } from '../accounts/active.ts';
import type { Db, Tx } from '../../db/knex.ts';
import { transaction } from '../../db/tx.ts';
import type { Clock } from '../../clock.ts';
import { isUniqueViolation } from '../../db/dialect.ts';
import { AppError, isAppError } from '../../errors.ts';
import { fromId } from '../shared/ids.ts';
import { noEvents, type EventRecorder } from '../events/types.ts';
import { normalizeCpf } from '../users/cpf.ts';
import { usersRepo, type User } from '../users/repo.ts';
import type { UsersService } from '../users/service.ts';
import type { TagsService } from '../tags/service.ts';
import type { EnrollmentsService } from '../enrollments/service.ts';
import type { Delivery } from './deliveries-repo.ts';
import { deliveriesRepo } from './deliveries-repo.ts';
import { secretMatches, urlMatches } from './secrets.ts';
import { gatewayOf, type SaleEvent, type SaleStatus } from './gateways.ts';
import { transactionSnapshot } from './transactions.ts';
import { transactionsRepo, type SaleTransaction } from './transactions-repo.ts';

/** What each normalized status does to access. */
export const EFFECTS: Record<SaleStatus, 'grant' | 'end'> = {
  approved: 'grant',
  trial: 'grant',
  subscription_active: 'grant',
  refunded: 'end',
  canceled: 'end',
  chargeback: 'end',
  subscription_canceled: 'end',
};

/** The sale's and the subscription's status as v2 shows them. */
function statuses(e: SaleEvent): { transaction: string | null; recurrence: string | null } {
  switch (e.status) {
    case 'trial':
      return { transaction: 'trial', recurrence: 'trial' };
    case 'subscription_active':
      return { transaction: null, recurrence: 'active' };
    case 'subscription_canceled':
      return { transaction: null, recurrence: 'canceled' };
    case 'approved':
      return { transaction: 'approved', recurrence: e.recurrenceId ? 'active' : null };
    default:
      return { transaction: e.status, recurrence: null };
  }
}

export type PostbackOutcome =
  | { kind: 'recorded'; transaction: SaleTransaction; duplicate: boolean }
  | { kind: 'ignored'; reason: string };

export class PostbacksService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly users: UsersService;
  private readonly tags: TagsService;
  private readonly enrollments: EnrollmentsService;
  private readonly events: EventRecorder;
  constructor(
    db: Db,
    clock: Clock,
    users: UsersService,
    tags: TagsService,
    enrollments: EnrollmentsService,
    events: EventRecorder = noEvents,
  ) {
    this.db = db;
    this.clock = clock;
    this.users = users;
    this.tags = tags;
    this.enrollments = enrollments;
    this.events = events;
  }

  /**
   * The delivery a postback URL names (404 for an unknown id and a wrong token alike), and
   * whether the presented secret opens it (401).
   */
  async authenticate(
    rawId: string,
    token: string | undefined,
    secret: string | undefined,
  ): Promise<Delivery> {
    const id = fromId(rawId);
    const d = id === null ? null : await deliveriesRepo.getAny({ tx: this.db }, id);
    if (!d || !urlMatches(d, token)) throw new AppError('not_found');
    if (!secretMatches(d, secret)) throw new AppError('unauthenticated');
    await assertAccountActive({ tx: this.db }, d.accountId);
    return d;
  }

  /**
   * Parses (422) and applies one postback to an authenticated delivery. A unique violation means
   * a concurrent postback committed first (PostgreSQL): this very sale (answered as a duplicate),
   * or another sale that created the same new buyer (which the users service reports as
   * `already_exists`). Either way the work is done again in a new transaction, which now sees
   * the winner's rows: a repeat is found as one, the buyer as a student who exists.
   */
  async receive(d: Delivery, body: unknown): Promise<PostbackOutcome> {
    const parsed = gatewayOf(d.gateway)!.parse(body);
    if ('ignored' in parsed) return { kind: 'ignored', reason: 'not_applicable' };
    for (let attempt = 1; ; attempt++) {
      try {
        const outcome = await transaction(this.db, (tx) => this.apply({ tx }, d, parsed));
        if (outcome.kind === 'recorded' && outcome.transaction.error === 'unknown_product')
          return { kind: 'ignored', reason: 'not_applicable' };
        return outcome;
      } catch (err) {
        const raced = isUniqueViolation(err) || (isAppError(err) && err.code === 'already_exists');
        if (!raced || attempt >= 3) throw err;
      }
    }
  }

  /**
   * One postback applied in the caller's transaction (sandbox scenarios load their sales so): the
   * same parsing, recording, grants and events as a postback that arrives over HTTP.
   */
  async receiveIn({ tx }: { tx: Tx }, d: Delivery, body: unknown): Promise<PostbackOutcome> {
    const parsed = gatewayOf(d.gateway)!.parse(body);
    if ('ignored' in parsed) return { kind: 'ignored', reason: parsed.ignored };
    return this.apply({ tx }, d, parsed);
  }

  private async apply({ tx }: { tx: Tx }, stale: Delivery, e: SaleEvent): Promise<PostbackOutcome> {
    const seen = await transactionsRepo.find({ tx }, stale.id, e.transactionId, e.status);
    if (seen) return { kind: 'recorded', transaction: seen, duplicate: true };
    // Read again inside the transaction: an archive that committed meanwhile must win.
    const d = (await deliveriesRepo.getAny({ tx }, stale.id)) ?? stale;
    const accountId = d.accountId;
    const effect = EFFECTS[e.status];
    const listened = e.productIds.some((p) => d.externalIds.includes(p));
    const error =
      d.status !== 'active' ? 'delivery_archived' : !listened ? 'unknown_product' : null;
    const email = e.client.email!;
    let user = await usersRepo.findByEmail({ tx }, accountId, email.toLowerCase());
    if (!user && !error && effect === 'grant')
      user = await this.createStudent({ tx }, accountId, e);
    const { transaction: txStatus, recurrence } = statuses(e);
    const id = await transactionsRepo.insert(
      { tx },
      {
        accountId,
        deliveryId: d.id,
        userId: user?.id ?? null,
        engine: d.gateway,
        transactionId: e.transactionId,
        recurrenceId: e.recurrenceId,
        event: e.status,
        productIds: e.productIds,
        clientName: e.client.name,
        clientEmail: email,
        clientDoc: e.client.doc,
        clientPhone: e.client.phone,
        status: error ? 'ignored' : 'processed',
        transactionStatus: txStatus,
        recurrenceStatus: recurrence,
        error,
      },
      this.clock.now().toISOString(),
    );
    if (!error && user) {
      if (effect === 'grant') await this.grant({ tx }, d, user, id);
      else await this.enrollments.endForDelivery({ tx }, accountId, user.id, d.id);
    }
    const t = (await transactionsRepo.get({ tx }, accountId, id))!;
    await this.events.record(
      { tx },
      {
        accountId,
        type: 'transaction.recorded',
        data: { transaction: transactionSnapshot(t) },
      },
    );
    return { kind: 'recorded', transaction: t, duplicate: false };
  }

  private async grant(
    { tx }: { tx: Tx },
    d: Delivery,
    user: User,
    transactionId: number,
  ): Promise<void> {
    const duration = { duration: d.duration, unit: d.durationUnit };
    for (const p of d.products)
      await this.enrollments.grantAccess({ tx }, d.accountId, {
        userId: user.id,
        productId: p.productId,
        accessScheduleId: p.accessScheduleId,
        duration,
        deliveryId: d.id,
        transactionId,
      });
    for (const tagId of d.tagIds) await this.tags.add(d.accountId, user.id, tagId, { tx });
  }

  /** The buyer as a new student: a document that is not a valid CPF is left out, not refused. */
  private async createStudent({ tx }: { tx: Tx }, accountId: number, e: SaleEvent): Promise<User> {
    const email = e.client.email!;
    const doc = e.client.doc && normalizeCpf(e.client.doc) ? e.client.doc : null;
    return this.users.create(
      accountId,
      { name: e.client.name ?? email.split('@')[0]!, email, document: doc, phone: e.client.phone },
      { tx },
    );
  }
}
