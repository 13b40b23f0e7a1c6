// The in-transaction side of webhooks: recording an event creates one delivery (and one
// `webhook.deliver` job) per enabled endpoint subscribed to its type in its version; a replay item
// asks for one more attempt of an existing delivery. Both commit or roll back with the caller.
import type { Clock } from '../../clock.ts';
import { isPostgres, type Tx } from '../../db/engine.ts';
import { afterCommit } from '../../db/tx.ts';
import { AppError } from '../../errors.ts';
import type { JobEngine } from '../../jobs/types.ts';
import type { EventCatalog } from '../events/catalog.ts';
import type { Event, RecordStep } from '../events/types.ts';
import { deliveriesRepo as repo } from './deliveries-repo.ts';
import { endpointsRepo } from './repo.ts';
import { DELIVER_TASK, WINDOW_MS } from './schedule.ts';

export class WebhookFanOut {
  /** Endpoints that have a job in the transaction (by its handle). */
  private readonly woken = new WeakMap<object, Set<number>>();
  private readonly clock: Clock;
  private readonly jobs: JobEngine;
  private readonly catalog: EventCatalog;
  /**
   * PostgreSQL, in a process that runs the job engine: once the recording transaction has
   * committed, its endpoints' due deliveries are claimed here at once (the dispatcher, whose
   * claims coalesce per endpoint), without waiting for graphile-worker to pick their job up (a
   * notification, then a fetch by a runner of each lane of each process): event-to-delivery
   * p50 ~5.5 -> ~4.9 ms in bench/webhooks.ts on PostgreSQL (docs/speed.md). The job stays, for a
   * process that stops first: when it runs it finds nothing left to claim (one read). SQLite's
   * job engine is woken by the commit itself.
   */
  private readonly claimAfterCommit: ((endpointId: number) => void) | null;

  constructor(
    clock: Clock,
    jobs: JobEngine,
    catalog: EventCatalog,
    claimAfterCommit: ((endpointId: number) => void) | null = null,
  ) {
    this.clock = clock;
    this.jobs = jobs;
    this.catalog = catalog;
    this.claimAfterCommit = claimAfterCommit;
  }

  private iso(): string {
    return this.clock.now().toISOString();
  }

  private isPublic(type: string): boolean {
    return this.catalog.currentOf(type)?.visibility === 'public';
  }

  /**
   * PostgreSQL: the deliveries of events being recorded, inserted by the events' own statement
   * (EventsService.onRecord's part, a CTE of it): for each event of a public type, one delivery
   * per enabled endpoint of its account subscribed to its type in its version, due now, as
   * fanOutMany writes them. The endpoints are read on the insert's snapshot, as a read right after
   * it would see them (both before the commit). Its rows (delivery and endpoint ids) go to
   * fanOut/fanOutMany, which enqueue the jobs. None when no event's type is public.
   */
  deliveriesStep(events: { type: string }[]): RecordStep | null {
    const types = [...new Set(events.map((e) => e.type))].filter((t) => this.isPublic(t));
    if (types.length === 0) return null;
    const now = this.clock.now();
    return {
      sql: repo.INSERT_FOR_EVENTS,
      params: [types, now.toISOString(), new Date(now.getTime() + WINDOW_MS).toISOString()],
    };
  }

  /**
   * In the recording transaction: one delivery and one job per matching endpoint. `rows`: what
   * deliveriesStep's insert returned, when it travelled with the event's (PostgreSQL).
   */
  async fanOut({ tx }: { tx: Tx }, event: Event, rows?: unknown[]): Promise<void> {
    await this.fanOutMany({ tx }, [event], rows);
  }

  /**
   * Events recorded together (EventsService.recordMany): their deliveries in one multi-row
   * insert, and one job per endpoint and transaction, as for events recorded one by one in one
   * transaction. `rows`: the deliveries deliveriesStep inserted with the events (PostgreSQL).
   */
  async fanOutMany({ tx }: { tx: Tx }, events: Event[], rows?: unknown[]): Promise<void> {
    if (rows) {
      await this.wake({ tx }, repo.fromStep(rows));
      return;
    }
    const visible = events.filter((e) => this.isPublic(e.type));
    for (const accountId of new Set(visible.map((e) => e.accountId))) {
      // SQLite: the cheap check (a cached read) spares most events the endpoints' rows.
      // PostgreSQL (only without the step's rows, which every recording sends today): every
      // statement is a round trip, so the rows are read at once.
      if (!isPostgres(tx) && !(await endpointsRepo.anyEnabled({ tx }, accountId))) continue;
      const endpoints = await endpointsRepo.enabled({ tx }, accountId);
      if (endpoints.length === 0) continue;
      const now = this.clock.now();
      const fresh: Record<string, unknown>[] = [];
      for (const event of visible.filter((e) => e.accountId === accountId))
        for (const endpoint of endpoints)
          if (
            endpoint.payloadVersion === event.version &&
            (endpoint.eventTypes.includes('*') || endpoint.eventTypes.includes(event.type))
          )
            fresh.push({
              account_id: event.accountId,
              endpoint_id: endpoint.id,
              event_id: event.id,
              event_type: event.type,
              status: 'pending',
              // Due at once: the endpoint's job claims it, or an attempt there that finishes
              // first (its job then finds nothing left to do; see dispatcher.ts).
              next_attempt_at: now.toISOString(),
              due_at: now.toISOString(),
              deadline_at: new Date(now.getTime() + WINDOW_MS).toISOString(),
              created_at: now.toISOString(),
              updated_at: now.toISOString(),
            });
      const ids = await repo.insertMany({ tx }, fresh);
      await this.wake(
        { tx },
        fresh.map((r, i) => ({ id: ids[i]!, endpointId: r.endpoint_id as number })),
      );
    }
  }

  /**
   * One job per endpoint and transaction: it fills the endpoint's free slots with the deliveries
   * due there, the others this transaction recorded too. `created`: in id order. (A savepoint
   * has a handle of its own: a job rolled back with one is not counted here.)
   */
  private async wake({ tx }: { tx: Tx }, created: { id: number; endpointId: number }[]) {
    let woken = this.woken.get(tx);
    if (!woken) this.woken.set(tx, (woken = new Set()));
    const claim = this.claimAfterCommit;
    const committed = claim && this.jobs.status === 'running' ? afterCommit(tx) : null;
    for (const d of created) {
      if (woken.has(d.endpointId)) continue;
      woken.add(d.endpointId);
      // No run_at: on PostgreSQL the queue's clock is the database's.
      await this.jobs.enqueue({ tx }, DELIVER_TASK, {
        delivery_id: d.id,
        endpoint_id: d.endpointId,
      });
      if (committed) void committed.then((ok) => ok && claim!(d.endpointId));
    }
  }

  /**
   * The account is active again: a job for each of its endpoints with deliveries due, which
   * waited while it was not (blocked, removed, unavailable), in the transaction that activates it.
   */
  async resume({ tx }: { tx: Tx }, accountId: number): Promise<void> {
    for (const d of await repo.firstDueOfAccount({ tx }, accountId, this.iso()))
      await this.jobs.enqueue({ tx }, DELIVER_TASK, {
        delivery_id: d.id,
        endpoint_id: d.endpointId,
      });
  }

  /** A replay of one delivery (an item of a webhook.replay operation), in its transaction. */
  async requestReplay(
    { tx }: { tx: Tx },
    accountId: number,
    deliveryId: number | null,
  ): Promise<{ eventId: number }> {
    const d = deliveryId === null ? null : await repo.get({ tx }, deliveryId);
    // Gone with its event (past the retention) since the replay was requested.
    if (!d || d.accountId !== accountId) throw new AppError('not_found');
    // Judged on the row when written: an attempt under way (it enqueues the replay when its
    // outcome is recorded) may have finished since the read above.
    const status = await repo.addReplay({ tx }, d.id, this.iso());
    if (status === null) throw new AppError('not_found');
    if (status !== 'in_progress')
      await this.jobs.enqueue({ tx }, DELIVER_TASK, {
        delivery_id: d.id,
        endpoint_id: d.endpointId,
      });
    return { eventId: d.eventId };
  }
}
