// What integrators do with deliveries: list and read them and their attempts, and replay events
// in bulk as an operation (one item per event, each adding a `replay` attempt to the event's
// existing delivery; ./fanout.ts applies them).
import type { Clock } from '../../clock.ts';
import type { Db, Tx } from '../../db/engine.ts';
import { inTransaction } from '../../db/tx.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { PageResult } from '../../db/page.ts';
import { AppError } from '../../errors.ts';
import type { AuthContext } from '../credentials/auth.ts';
import { instantParam, type EventsService } from '../events/service.ts';
import type { OperationsService } from '../operations/service.ts';
import type { Operation } from '../operations/repo.ts';
import { fromId } from '../shared/ids.ts';
import { deliveriesRepo, type Attempt, type Delivery } from './deliveries-repo.ts';
import type { Endpoint } from './repo.ts';
import type { WebhooksService } from './service.ts';

export const REPLAY_TYPE = 'webhook.replay';
export const MAX_REPLAY = 1000;

export interface DeliveryListQuery {
  limit?: number;
  cursor?: string;
  sort?: 'created_at' | '-created_at';
  status?: string;
  event_id?: string;
  event_type?: string;
  created_after?: string;
  created_before?: string;
}

export interface ReplayInput {
  event_ids?: string[];
  event_types?: string[];
  occurred_after?: string;
  occurred_before?: string;
}

export class WebhookDeliveries {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  private readonly endpoints: WebhooksService;
  private readonly events: EventsService;
  private readonly operations: OperationsService;
  constructor(
    db: Db,
    clock: Clock,
    cursors: CursorCodec,
    endpoints: WebhooksService,
    events: EventsService,
    operations: OperationsService,
  ) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.endpoints = endpoints;
    this.events = events;
    this.operations = operations;
  }

  private endpoint(
    accountId: number,
    id: number | null,
    { tx }: { tx?: Tx } = {},
  ): Promise<Endpoint> {
    return this.endpoints.get(accountId, id, { tx });
  }

  async list(
    accountId: number,
    endpointId: number | null,
    q: DeliveryListQuery,
  ): Promise<PageResult<Delivery> & { endpoint: Endpoint; last: Map<number, Attempt> }> {
    const endpoint = await this.endpoint(accountId, endpointId);
    const filters = {
      status: q.status,
      // Not an id a record can have: a filter that matches nothing.
      eventId: q.event_id === undefined ? undefined : fromId(q.event_id),
      eventType: q.event_type,
      createdAfter: instantParam('created_after', q.created_after),
      createdBefore: instantParam('created_before', q.created_before),
    };
    const page = await deliveriesRepo.page({ tx: this.db }, this.cursors, endpoint.id, filters, q);
    const rows = page.rows;
    const last = await deliveriesRepo.lastAttempts({ tx: this.db }, rows);
    return { rows, page: page.page, endpoint, last };
  }

  async get(
    accountId: number,
    endpointId: number | null,
    deliveryId: number | null,
  ): Promise<{ endpoint: Endpoint; delivery: Delivery; last: Attempt | null }> {
    const endpoint = await this.endpoint(accountId, endpointId);
    const d =
      deliveryId === null
        ? null
        : await deliveriesRepo.getOf({ tx: this.db }, endpoint.id, deliveryId);
    if (!d) throw new AppError('not_found');
    const last = d.attemptsCount
      ? await deliveriesRepo.attempt({ tx: this.db }, d.id, d.attemptsCount)
      : null;
    return { endpoint, delivery: d, last };
  }

  async attempt(
    accountId: number,
    endpointId: number | null,
    deliveryId: number | null,
    number: number,
  ): Promise<Attempt> {
    const { delivery } = await this.get(accountId, endpointId, deliveryId);
    const a = await deliveriesRepo.attempt({ tx: this.db }, delivery.id, number);
    if (!a) throw new AppError('not_found');
    return a;
  }

  /**
   * Resends recorded events to the endpoint as an operation, one item per event: each adds an
   * attempt (origin `replay`) to the event's existing delivery. Only events recorded before this
   * request and still retained qualify; every filter narrows.
   */
  async replay(
    auth: AuthContext,
    endpointId: number | null,
    input: ReplayInput,
    opts: { tx?: Tx } = {},
  ): Promise<Operation> {
    const filters = {
      eventIds: input.event_ids?.map((s) => fromId(s) ?? 0),
      eventTypes: input.event_types,
      occurredAfter: instantParam('occurred_after', input.occurred_after, 'field'),
      occurredBefore: instantParam('occurred_before', input.occurred_before, 'field'),
      since: this.events.retainedSince(),
      until: this.clock.now().toISOString(),
    };
    return inTransaction(this.db, opts.tx, async (tx) => {
      const endpoint = await this.endpoint(auth.account.id, endpointId, { tx });
      if (endpoint.status !== 'enabled')
        throw new AppError('state_conflict', {
          details: [
            {
              code: 'endpoint_disabled',
              message: 'Enable the webhook first.',
              reason: 'endpoint_disabled',
            },
          ],
        });
      const found = await deliveriesRepo.replayable({ tx }, endpoint.id, filters, MAX_REPLAY + 1);
      if (found.length === 0)
        throw new AppError('domain_rule_violation', {
          details: [
            {
              code: 'no_matching_events',
              message: 'No retained event delivered to this webhook matches the filters.',
              reason: 'no_matching_events',
            },
          ],
        });
      if (found.length > MAX_REPLAY)
        throw new AppError('too_many_items', {
          details: [
            {
              code: 'too_many_items',
              message: `More than ${MAX_REPLAY} events match; narrow the filters.`,
            },
          ],
        });
      const items = found.map((d) => ({
        key: String(d.event_id),
        payload: { webhook_id: String(endpoint.id), delivery_id: String(d.id) },
      }));
      return this.operations.open(auth, REPLAY_TYPE, items, { tx });
    });
  }
}
