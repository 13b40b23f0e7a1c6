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
  type Delivery,
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

/** What the delivery has due at `now`: a replay, an automatic attempt, or nothing. */
function dueness(d: Delivery, now: string) {
  const abandoned = d.status === 'in_progress' && d.leaseUntil !== null && d.leaseUntil <= now;
  const prior = abandoned ? (d.priorStatus ?? 'failed') : d.status;
  const free = d.status !== 'in_progress' || abandoned;
  const replay = free && d.replaysPending > 0;
  const open = prior === 'pending' || prior === 'failed';
  const automatic = free && open && d.nextAttemptAt !== null && d.nextAttemptAt <= now;
  return { prior, open, replay, automatic };
}

/** claim(): the endpoint has no free slot. */
const FULL = 'full';

/** Opened secrets kept in memory, at most (forgotten all at once past it). */
const MAX_OPENED = 10_000;

const is2xx = (s: number | null) => s !== null && s >= 200 && s < 300;

export class WebhookDispatcher {
  private busy = 0;
  private closing = false;
  private readonly waiters: (() => void)[] = [];
  private readonly inflight = new Set<Promise<void>>();
  /** Unsealed signing secrets by endpoint and sealed value (unsealing is an AES-GCM decryption). */
  private readonly opened = new Map<string, string>();

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
   * Claims the delivery if it has an attempt due and its endpoint a free slot, and fills the
   * endpoint's other free slots with the deliveries waiting longest there, in one transaction;
   * starts those attempts and resolves once they have started, with their promises (wrapped: a
   * promise resolving to a promise would wait for it), or with null when none started.
   */
  async dispatch(
    deliveryId: number,
    endpointId?: number,
  ): Promise<{ runs: Promise<void>[] } | null> {
    // Stopping: what is due stays due, for the next process.
    if (this.closing) return null;
    if (await this.nothingToDo(deliveryId)) return null;
    await this.slot();
    // More slots of this process, if free now (never waited for: the first one is enough).
    let slots = 1;
    while (slots < PER_ENDPOINT && this.busy < PER_PROCESS && this.waiters.length === 0) {
      this.busy++;
      slots++;
    }
    let claims: Claim[];
    try {
      claims = await transaction(this.db, (tx) =>
        this.claimMany(tx, deliveryId, endpointId, slots),
      );
    } catch (err) {
      for (let i = 0; i < slots; i++) this.release();
      throw err;
    }
    for (let i = claims.length; i < slots; i++) this.release();
    if (claims.length === 0) return null;
    const runs = claims.map((claim) => {
      const run = this.attempts(claim).finally(() => {
        this.inflight.delete(run);
        this.release();
      });
      this.inflight.add(run);
      return run;
    });
    return { runs };
  }

  /** The delivery, then up to `max` in all with those waiting longest for a slot of its endpoint. */
  private async claimMany(
    tx: Tx,
    deliveryId: number,
    endpointId: number | undefined,
    max: number,
  ): Promise<Claim[]> {
    const id = endpointId ?? (await repo.get(tx, deliveryId))?.endpointId;
    if (id === undefined) return [];
    // PostgreSQL: the endpoint's row lock, held to the end of this transaction.
    const endpoint = await endpointsRepo.lockRow(tx, id);
    if (!endpoint) return [];
    const first = await this.claim(tx, deliveryId, endpoint);
    if (first === FULL) return [];
    const claims = first ? [first] : [];
    if (endpoint.status !== 'enabled' || endpoint.deletedAt) return claims;
    const now = this.iso();
    while (claims.length < max) {
      const ids = await repo.waiting(tx, endpoint.id, max - claims.length, now);
      if (ids.length === 0) break;
      for (const next of ids) {
        const c = await this.claim(tx, next, endpoint);
        if (c === FULL) return claims;
        if (c) claims.push(c);
      }
    }
    return claims;
  }

  /**
   * Read outside any transaction, without the endpoint's lock: nothing to claim, because the
   * endpoint has no free slot and the delivery waits for one (or has nothing due: an attempt that
   * finished took it over already), or because it has a free slot but neither this delivery nor
   * any other waits for it. Waiting without the lock is safe: every attempt counted as under way,
   * when it finishes, either claims the longest-waiting delivery or, finding none waiting in its
   * transaction, looks again after its commit (so one that started waiting meanwhile is seen).
   */
  private async nothingToDo(deliveryId: number): Promise<boolean> {
    const d = await repo.get(this.db, deliveryId);
    if (!d) return true;
    const now = this.iso();
    const { replay, automatic } = dueness(d, now);
    const due = replay || automatic;
    if ((await repo.inFlight(this.db, d.endpointId, now)) >= PER_ENDPOINT) return d.waiting || !due;
    // A free slot: this delivery, or those waiting there (a fan-out job stands for all the
    // deliveries its transaction recorded for the endpoint).
    if (due || d.waiting) return false;
    return (await repo.waiting(this.db, d.endpointId, 1, now)).length === 0;
  }

  /** Every delivery due by the clock; with `wait`, resolves when their attempts have finished. */
  async runDue(options: { wait?: boolean; limit?: number } = {}): Promise<number> {
    const now = this.iso();
    const ids = await repo.due(this.db, now, options.limit ?? 500);
    // Each endpoint with deliveries waiting: its longest-waiting one (a claim takes what slots
    // are free); the rest follow as attempts finish.
    for (const endpointId of await repo.waitingEndpoints(this.db))
      ids.push(...(await repo.waiting(this.db, endpointId, 1, now)));
    const runs: Promise<void>[] = [];
    for (const id of ids) {
      const started = await this.dispatch(id);
      if (started) runs.push(...started.runs);
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
    this.sender.close();
  }

  private async slot(): Promise<void> {
    while (this.busy >= PER_PROCESS) await new Promise<void>((r) => this.waiters.push(r));
    this.busy++;
  }

  private release(): void {
    this.busy--;
    this.waiters.shift()?.();
  }

  /**
   * Claims the delivery if it has an attempt due and its endpoint a free slot: FULL when the
   * endpoint has none (the delivery then waits for the next attempt there to finish). The caller
   * locked the endpoint's row (PostgreSQL) and read it.
   */
  private async claim(
    tx: Tx,
    deliveryId: number,
    endpoint: Endpoint,
  ): Promise<Claim | typeof FULL | null> {
    const d = await repo.get(tx, deliveryId);
    if (!d || d.endpointId !== endpoint.id) return null;
    const now = this.iso();
    const { prior, open, replay, automatic } = dueness(d, now);
    // Nothing to claim: it waits for nothing either.
    const unwait = async () => {
      if (d.waiting) await repo.update(tx, d.id, { waiting: false, updated_at: now });
      return null;
    };
    if (!replay && !automatic) return unwait();
    if (endpoint.status !== 'enabled' || endpoint.deletedAt) {
      await this.close(tx, d.id, open ? 'canceled' : prior, now);
      return null;
    }
    if ((await repo.inFlight(tx, endpoint.id, now)) >= PER_ENDPOINT) {
      if (!d.waiting) await repo.update(tx, d.id, { waiting: true, updated_at: now });
      return FULL;
    }
    const event = await eventsRepo.get(tx, d.accountId, d.eventId);
    if (!event) return unwait(); // swept with its deliveries; nothing left to send
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

  /** The secrets signing now (read at every claim: rotations apply at once), opened once each. */
  private async secrets(tx: Tx, endpoint: Endpoint, now: string): Promise<string[]> {
    const rows = await endpointsRepo.activeSecrets(tx, endpoint.id, now);
    return rows.map((r) => {
      const key = `${endpoint.id}:${r.sealed}`;
      let secret = this.opened.get(key);
      if (secret === undefined) {
        secret = unseal(this.secretsKey, r.sealed, secretContext(endpoint.id));
        if (this.opened.size >= MAX_OPENED) this.opened.clear();
        this.opened.set(key, secret);
      }
      return secret;
    });
  }

  /**
   * Runs the attempt, then the next one its endpoint had waiting, if finishing the first claimed it
   * (the slot passes straight on, in the same transaction), and so on.
   */
  private async attempts(first: Claim): Promise<void> {
    let claim: Claim | null = first;
    while (claim) {
      const current: Claim = claim;
      claim = null;
      try {
        claim = await this.attempt(current);
      } catch (err) {
        this.logger.error({ err, delivery: current.deliveryId }, 'webhook attempt failed');
      }
    }
  }

  private async attempt(claim: Claim): Promise<Claim | null> {
    const timestamp = Math.floor(this.clock.now().getTime() / 1000);
    const headers = signedHeaders(claim.secrets, claim.msgId, timestamp, claim.body);
    const result = await this.sender.send(claim.url, headers, claim.body);
    // Nobody waits for a slot of this process: the slot may go to the endpoint's next delivery.
    const handOver = !this.closing && this.waiters.length === 0;
    const { next, woken, look } = await transaction(this.db, (tx) =>
      this.finish(tx, claim, result, handOver),
    );
    // Nothing was waiting when this transaction looked; one that started waiting since (without
    // the lock: nothingToDo) is seen now.
    if (look) woken.push(...(await repo.waiting(this.db, claim.endpointId, 1, this.iso())));
    // Straight to the next attempt in this process, without a trip through the job queue. Should
    // the process stop first, the delivery is still due and the minute sweep claims it.
    for (const id of woken)
      void this.dispatch(id).catch((err) =>
        this.logger.error({ err, delivery: id }, 'webhook dispatch failed'),
      );
    return next;
  }

  /**
   * Records the attempt and what follows from it. The endpoint's slot is free again: with
   * `handOver`, the next delivery waiting for it is claimed here (`next`, this slot's next
   * attempt); otherwise it is returned in `woken`, for dispatch() to claim.
   */
  private async finish(
    tx: Tx,
    claim: Claim,
    result: SendResult,
    handOver: boolean,
  ): Promise<{ next: Claim | null; woken: number[]; look?: boolean }> {
    const none = { next: null, woken: [] };
    const endpoint = (await endpointsRepo.lockRow(tx, claim.endpointId))!;
    const d = await repo.get(tx, claim.deliveryId);
    // Our lease ran out and another attempt took the delivery over: it records the outcome.
    if (!d || d.leaseOwner !== claim.owner) return none;
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
    const job = { delivery_id: d.id, endpoint_id: d.endpointId };
    if (more) await this.jobs.enqueue(tx, DELIVER_TASK, job);
    else if (next && status === 'failed')
      await this.jobs.enqueue(tx, DELIVER_TASK, job, { runAt: new Date(next) });
    // A slot of the endpoint is free: the next delivery that found it full takes it.
    if (!live) return none;
    // Stopping: the waiting ones stay waiting (and due), for the other instances' finishing
    // attempts and the next process's sweep; taking one here would only drop it from the line.
    if (this.closing) return none;
    if (!handOver) {
      const woken = await repo.takeWaiting(tx, endpoint.id, 1, iso);
      return { next: null, woken, look: woken.length === 0 };
    }
    // Claimed here, under the lock this transaction holds. One that is no longer due stops
    // waiting (claim() says so) and the next is tried.
    for (let tries = 0; tries < PER_ENDPOINT; tries++) {
      const [id] = await repo.waiting(tx, endpoint.id, 1, iso);
      if (id === undefined) return { next: null, woken: [], look: true };
      const next = await this.claim(tx, id, endpoint);
      if (next === FULL) break;
      if (next) return { next, woken: [] };
    }
    // Nothing claimed here: whatever waits is looked for again after the commit.
    return { next: null, woken: [], look: true };
  }
}
