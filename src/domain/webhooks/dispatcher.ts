// Carries out webhook deliveries (created by ./fanout.ts, with a `webhook.deliver` job each, in
// the recording transaction). The job claims the delivery (a 60 s lease) and starts its HTTP
// attempt, then returns: the attempt runs beside the job runner, so slow endpoints never hold the
// runner's few slots. At most PER_ENDPOINT attempts per endpoint run at once (across instances:
// claims lock the endpoint's row); a delivery that finds its endpoint full waits, and the next
// attempt that finishes there wakes it. So a slow or dead endpoint delays only its own deliveries.
//
// Statuses: pending -> in_progress -> delivered | failed (a retry is scheduled) -> ... -> dead
// (none is left); canceled when the endpoint is disabled or deleted. Retries follow RETRY_MS
// from the delivery's creation; `deadline_at` is the last of them. Times come from the injectable
// clock; `due_at` says when a delivery next needs a worker, and runDue() (the minute sweep, or a
// test that moved its clock) claims whatever is due, whatever the job queue's own clock says.
import type { Clock } from '../../clock.ts';
import type { Db, Tx } from '../../db/engine.ts';
import { transaction } from '../../db/tx.ts';
import type { JobEngine } from '../../jobs/types.ts';
import type { Logger } from '../../log.ts';
import { unseal } from '../../secrets-key.ts';
import { randomHex } from '../shared/ids.ts';
import { eventsRepo } from '../events/repo.ts';
import {
  deliveriesRepo as repo,
  type AttemptOrigin,
  type DeliveryStatus,
} from './deliveries-repo.ts';
import { endpointsRepo, type Endpoint } from './repo.ts';
import type { SendResult, WebhookSender } from './sender.ts';
import { signedHeaders } from './signature.ts';
import {
  DELIVER_TASK,
  envelope,
  LEASE_MS,
  PER_ENDPOINT,
  PER_PROCESS,
  RETRY_MS,
  secretContext,
} from './schedule.ts';

interface Claim {
  deliveryId: number;
  endpointId: number;
  owner: string;
  origin: AttemptOrigin;
  /** The status to return to when a replay attempt fails. */
  prior: DeliveryStatus;
  url: string;
  msgId: string;
  body: string;
  secrets: string[];
}

const is2xx = (s: number | null) => s !== null && s >= 200 && s < 300;

export class WebhookDispatcher {
  private busy = 0;
  private closing = false;
  private readonly waiters: (() => void)[] = [];
  private readonly inflight = new Set<Promise<void>>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly jobs: JobEngine,
    readonly sender: WebhookSender,
    private readonly secretsKey: Buffer,
    private readonly logger: Logger,
  ) {}

  private iso(offsetMs = 0): string {
    return new Date(this.clock.now().getTime() + offsetMs).toISOString();
  }

  /**
   * Claims the delivery if it has an attempt due and its endpoint a free slot, and starts that
   * attempt; resolves once it has started, with the attempt's own promise (wrapped: a promise
   * resolving to a promise would wait for it), or with null.
   */
  async dispatch(deliveryId: number): Promise<{ run: Promise<void> } | null> {
    // Stopping: what is due stays due, for the next process.
    if (this.closing) return null;
    await this.slot();
    let claim: Claim | null;
    try {
      claim = await transaction(this.db, (tx) => this.claim(tx, deliveryId));
    } catch (err) {
      this.release();
      throw err;
    }
    if (!claim) {
      this.release();
      return null;
    }
    const run = this.attempt(claim)
      .catch((err) => this.logger.error({ err, delivery: deliveryId }, 'webhook attempt failed'))
      .finally(() => {
        this.inflight.delete(run);
        this.release();
      });
    this.inflight.add(run);
    return { run };
  }

  /** Every delivery due by the clock; with `wait`, resolves when their attempts have finished. */
  async runDue(options: { wait?: boolean } = {}): Promise<number> {
    const ids = await repo.due(this.db, this.iso(), 500);
    const runs: Promise<void>[] = [];
    for (const id of ids) {
      const started = await this.dispatch(id);
      if (started) runs.push(started.run);
    }
    if (options.wait) await Promise.all(runs);
    return runs.length;
  }

  /** Lets every attempt under way finish and record its outcome (shutdown). */
  async drain(): Promise<void> {
    this.closing = true;
    // `busy` also counts claims still being written, which are not in `inflight` yet.
    while (this.busy > 0) {
      if (this.inflight.size) await Promise.allSettled([...this.inflight]);
      else await new Promise((r) => setTimeout(r, 5));
    }
  }

  private async slot(): Promise<void> {
    while (this.busy >= PER_PROCESS) await new Promise<void>((r) => this.waiters.push(r));
    this.busy++;
  }

  private release(): void {
    this.busy--;
    this.waiters.shift()?.();
  }

  private async claim(tx: Tx, deliveryId: number): Promise<Claim | null> {
    const found = await repo.get(tx, deliveryId);
    if (!found) return null;
    await endpointsRepo.lock(tx, found.endpointId);
    const d = (await repo.get(tx, deliveryId))!;
    const now = this.iso();
    const abandoned = d.status === 'in_progress' && d.leaseUntil !== null && d.leaseUntil <= now;
    const prior = abandoned ? (d.priorStatus ?? 'failed') : d.status;
    const free = d.status !== 'in_progress' || abandoned;
    const replay = free && d.replaysPending > 0;
    const open = prior === 'pending' || prior === 'failed';
    const automatic = free && open && d.nextAttemptAt !== null && d.nextAttemptAt <= now;
    if (!replay && !automatic) return null;
    const endpoint = (await endpointsRepo.byId(tx, d.endpointId))!;
    if (endpoint.status !== 'enabled' || endpoint.deletedAt) {
      await this.close(tx, d.id, open ? 'canceled' : prior, now);
      return null;
    }
    if ((await repo.inFlight(tx, endpoint.id, now)) >= PER_ENDPOINT) {
      await repo.update(tx, d.id, { waiting: true, updated_at: now });
      return null;
    }
    const event = await eventsRepo.get(tx, d.accountId, d.eventId);
    if (!event) return null; // swept with its deliveries; nothing left to send
    const owner = randomHex(8);
    const leaseUntil = this.iso(LEASE_MS);
    await repo.update(tx, d.id, {
      status: 'in_progress',
      prior_status: prior,
      lease_owner: owner,
      lease_until: leaseUntil,
      // If this worker dies, the recovery sweep finds the delivery once the lease has run out.
      due_at: leaseUntil,
      waiting: false,
      updated_at: now,
    });
    return {
      deliveryId: d.id,
      endpointId: endpoint.id,
      owner,
      origin: replay ? 'replay' : 'automatic',
      prior,
      url: endpoint.url,
      msgId: `evt_${event.id}`,
      body: envelope(event),
      secrets: await this.secrets(tx, endpoint, now),
    };
  }

  private async close(tx: Tx, id: number, status: DeliveryStatus, now: string) {
    await repo.update(tx, id, {
      status,
      next_attempt_at: null,
      due_at: null,
      replays_pending: 0,
      waiting: false,
      lease_owner: null,
      lease_until: null,
      prior_status: null,
      updated_at: now,
    });
  }

  private async secrets(tx: Tx, endpoint: Endpoint, now: string): Promise<string[]> {
    const rows = await endpointsRepo.activeSecrets(tx, endpoint.id, now);
    return rows.map((r) => unseal(this.secretsKey, r.sealed, secretContext(endpoint.id)));
  }

  private async attempt(claim: Claim): Promise<void> {
    const timestamp = Math.floor(this.clock.now().getTime() / 1000);
    const headers = signedHeaders(claim.secrets, claim.msgId, timestamp, claim.body);
    const result = await this.sender.send(claim.url, headers, claim.body);
    const woken = await transaction(this.db, (tx) => this.finish(tx, claim, result));
    // Straight to the next attempt in this process, without a trip through the job queue. Should
    // the process stop first, the delivery is still due and the minute sweep claims it.
    for (const id of woken)
      void this.dispatch(id).catch((err) =>
        this.logger.error({ err, delivery: id }, 'webhook dispatch failed'),
      );
  }

  /** Records the attempt and what follows from it; returns the deliveries it woke. */
  private async finish(tx: Tx, claim: Claim, result: SendResult): Promise<number[]> {
    await endpointsRepo.lock(tx, claim.endpointId);
    const d = await repo.get(tx, claim.deliveryId);
    // Our lease ran out and another attempt took the delivery over: it records the outcome.
    if (!d || d.leaseOwner !== claim.owner) return [];
    const endpoint = (await endpointsRepo.byId(tx, claim.endpointId))!;
    const now = this.clock.now();
    const iso = now.toISOString();
    const replay = claim.origin === 'replay';
    const automaticAttempts = d.automaticAttempts + (replay ? 0 : 1);
    const replaysPending = Math.max(0, d.replaysPending - (replay ? 1 : 0));
    let status: DeliveryStatus;
    let next: string | null = null;
    let live = endpoint.status === 'enabled' && !endpoint.deletedAt;
    if (result.httpStatus === 410 && live) {
      // Gone: the receiver asks us to stop. The endpoint is disabled, its deliveries canceled.
      await endpointsRepo.update(tx, endpoint.id, {
        status: 'disabled',
        disabled_reason: 'endpoint_gone',
        updated_at: iso,
      });
      await repo.cancelOpen(tx, endpoint.id, iso);
      live = false;
    }
    if (is2xx(result.httpStatus)) status = 'delivered';
    else if (!live)
      status = claim.prior === 'delivered' || claim.prior === 'dead' ? claim.prior : 'canceled';
    else if (replay) {
      // A replay is one attempt; a failed one leaves the delivery as it was.
      status = claim.prior;
      next = claim.prior === 'pending' || claim.prior === 'failed' ? d.nextAttemptAt : null;
    } else if (automaticAttempts <= RETRY_MS.length) {
      status = 'failed';
      const offset = RETRY_MS.slice(0, automaticAttempts).reduce((a, b) => a + b, 0);
      next = new Date(Math.max(Date.parse(d.createdAt) + offset, now.getTime())).toISOString();
    } else status = 'dead';
    const more = live && replaysPending > 0;
    await repo.insertAttempt(tx, {
      delivery_id: d.id,
      number: d.attemptsCount + 1,
      origin: claim.origin,
      http_status: result.httpStatus,
      duration_ms: result.durationMs,
      started_at: result.startedAt,
      finished_at: result.finishedAt,
      next_attempt_at: next,
      response_excerpt: result.responseExcerpt,
      transport_error: result.transportError,
    });
    await repo.update(tx, d.id, {
      status,
      attempts_count: d.attemptsCount + 1,
      automatic_attempts: automaticAttempts,
      replays_pending: live ? replaysPending : 0,
      next_attempt_at: next,
      due_at: more ? iso : next,
      delivered_at: status === 'delivered' ? (d.deliveredAt ?? result.finishedAt) : d.deliveredAt,
      lease_owner: null,
      lease_until: null,
      prior_status: null,
      updated_at: iso,
    });
    if (more) await this.jobs.enqueue(tx, DELIVER_TASK, { delivery_id: d.id });
    else if (next && status === 'failed')
      await this.jobs.enqueue(tx, DELIVER_TASK, { delivery_id: d.id }, { runAt: new Date(next) });
    // A slot of the endpoint is free: the next delivery that found it full takes it.
    return live ? repo.takeWaiting(tx, endpoint.id, 1, iso) : [];
  }
}
