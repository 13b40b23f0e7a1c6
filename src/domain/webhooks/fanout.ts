// The in-transaction side of webhooks: recording an event creates one delivery (and one
// `webhook.deliver` job) per enabled endpoint subscribed to its type in its version; a replay item
// asks for one more attempt of an existing delivery. Both commit or roll back with the caller.
import type { Clock } from '../../clock.ts';
import type { Tx } from '../../db/engine.ts';
import { AppError } from '../../errors.ts';
import type { JobEngine } from '../../jobs/types.ts';
import type { EventCatalog } from '../events/catalog.ts';
import type { Event } from '../events/types.ts';
import { deliveriesRepo as repo } from './deliveries-repo.ts';
import { endpointsRepo } from './repo.ts';
import { DELIVER_TASK, WINDOW_MS } from './schedule.ts';

export class WebhookFanOut {
  /** Endpoints that have a job in the transaction (by its handle). */
  private readonly woken = new WeakMap<object, Set<number>>();

  constructor(
    private readonly clock: Clock,
    private readonly jobs: JobEngine,
    private readonly catalog: EventCatalog,
  ) {}

  private iso(): string {
    return this.clock.now().toISOString();
  }

  /** In the recording transaction: one delivery and one job per matching endpoint. */
  async fanOut(tx: Tx, event: Event): Promise<void> {
    if (this.catalog.currentOf(event.type)?.visibility !== 'public') return;
    if (!(await endpointsRepo.anyEnabled(tx, event.accountId))) return;
    const endpoints = (await endpointsRepo.enabled(tx, event.accountId)).filter(
      (e) =>
        e.payloadVersion === event.version &&
        (e.eventTypes.includes('*') || e.eventTypes.includes(event.type)),
    );
    const now = this.clock.now();
    for (const endpoint of endpoints) {
      const id = await repo.insert(tx, {
        account_id: event.accountId,
        endpoint_id: endpoint.id,
        event_id: event.id,
        event_type: event.type,
        status: 'pending',
        // Waiting for a slot of the endpoint from the start: an attempt there that finishes
        // claims it, and its job then finds nothing left to do (see dispatcher.ts).
        waiting: true,
        next_attempt_at: now.toISOString(),
        due_at: now.toISOString(),
        deadline_at: new Date(now.getTime() + WINDOW_MS).toISOString(),
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      });
      // One job per endpoint and transaction: it claims this delivery and fills the endpoint's
      // free slots with the deliveries waiting there, the others this transaction recorded too.
      // (A savepoint has a handle of its own: a job rolled back with one is not counted here.)
      let woken = this.woken.get(tx);
      if (!woken) this.woken.set(tx, (woken = new Set()));
      if (woken.has(endpoint.id)) continue;
      woken.add(endpoint.id);
      // No run_at: on PostgreSQL the queue's clock is the database's.
      await this.jobs.enqueue(tx, DELIVER_TASK, { delivery_id: id, endpoint_id: endpoint.id });
    }
  }

  /** A replay of one delivery (an item of a webhook.replay operation), in its transaction. */
  async requestReplay(
    tx: Tx,
    accountId: number,
    deliveryId: number | null,
  ): Promise<{ eventId: number }> {
    const d = deliveryId === null ? null : await repo.get(tx, deliveryId);
    // Gone with its event (past the retention) since the replay was requested.
    if (!d || d.accountId !== accountId) throw new AppError('not_found');
    const changes: Record<string, unknown> = {
      replays_pending: d.replaysPending + 1,
      updated_at: this.iso(),
    };
    // An attempt under way keeps its lease as due_at; it enqueues the replay when it finishes.
    if (d.status !== 'in_progress') changes.due_at = this.iso();
    await repo.update(tx, d.id, changes);
    if (d.status !== 'in_progress')
      await this.jobs.enqueue(tx, DELIVER_TASK, { delivery_id: d.id, endpoint_id: d.endpointId });
    return { eventId: d.eventId };
  }
}
