// Carries out webhook deliveries (created by ./fanout.ts, with a `webhook.deliver` job each, in
// the recording transaction). The job claims the delivery (a 60 s lease) and starts its HTTP
// attempt, then returns: the attempt runs beside the job runner, so slow endpoints never hold the
// runner's few slots. At most PER_ENDPOINT attempts per endpoint run at once (across instances:
// claims lock the endpoint's row); a delivery that finds its endpoint full waits, and the next
// attempt that finishes there wakes it. So a slow or dead endpoint delays only its own deliveries.
// Claims and outcomes go by endpoint, several at a time: a claim reads the slots, the candidates,
// their events and the secrets once and writes the claimed rows in one statement; outcomes that
// finish while a transaction records others at the same endpoint wait for the next one (a group
// commit), which records them all and hands their slots to the next deliveries waiting. So the
// endpoint's lock is taken once per group, not once per delivery.
//
// Statuses: pending -> in_progress -> delivered | failed (a retry is scheduled) -> ... -> dead
// (none is left); canceled when the endpoint is disabled or deleted. Retries follow RETRY_MS
// from the delivery's creation; `deadline_at` is the last of them. Times come from the injectable
// clock; `due_at` says when a delivery next needs a worker, and runDue() (the minute sweep, or a
// test that moved its clock) claims whatever is due, whatever the job queue's own clock says.
import type { Clock } from '../../clock.ts';
import type { Db, Tx } from '../../db/engine.ts';
import { whileAway } from '../../db/pg-errors.ts';
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
  return { prior, open, replay, automatic, abandoned };
}

/** What recording an attempt's outcome gives its slot: its next claim, deliveries to wake. */
interface Settled {
  next: Claim | null;
  woken: number[];
  look: boolean;
}

/** An outcome waiting for its endpoint's next group commit. */
interface Outcome {
  claim: Claim;
  result: SendResult;
  done: (settled: Settled) => void;
  fail: (err: unknown) => void;
}

/** Opened secrets kept in memory, at most (forgotten all at once past it). */
const MAX_OPENED = 10_000;

const is2xx = (s: number | null) => s !== null && s >= 200 && s < 300;

export class WebhookDispatcher {
  private busy = 0;
  private closing = false;
  private readonly waiters: (() => void)[] = [];
  private readonly inflight = new Set<Promise<void>>();
  /** Outcomes not yet recorded, by endpoint; present while a transaction records some. */
  private readonly outcomes = new Map<number, Outcome[]>();
  /** Unsealed signing secrets by endpoint and sealed value (unsealing is an AES-GCM decryption). */
  private readonly opened = new Map<string, string>();
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly jobs: JobEngine;
  readonly sender: WebhookSender;
  private readonly secretsKey: Buffer;
  private readonly logger: Logger;

  constructor(
    db: Db,
    clock: Clock,
    jobs: JobEngine,
    sender: WebhookSender,
    secretsKey: Buffer,
    logger: Logger,
  ) {
    this.db = db;
    this.clock = clock;
    this.jobs = jobs;
    this.sender = sender;
    this.secretsKey = secretsKey;
    this.logger = logger;
  }

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
        this.claimMany({ tx }, deliveryId, endpointId, slots),
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
    { tx }: { tx: Tx },
    deliveryId: number,
    endpointId: number | undefined,
    max: number,
  ): Promise<Claim[]> {
    const id = endpointId ?? (await repo.get({ tx }, deliveryId))?.endpointId;
    if (id === undefined) return [];
    // PostgreSQL: the endpoint's row lock, held to the end of this transaction.
    const endpoint = await endpointsRepo.lockRow({ tx }, id);
    if (!endpoint) return [];
    const first = await repo.get({ tx }, deliveryId);
    return this.claimFrom({ tx }, endpoint, first?.endpointId === endpoint.id ? [first] : [], max);
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
    const d = await repo.get({ tx: this.db }, deliveryId);
    if (!d) return true;
    const now = this.iso();
    const { replay, automatic } = dueness(d, now);
    const due = replay || automatic;
    if ((await repo.inFlight({ tx: this.db }, d.endpointId, now)) >= PER_ENDPOINT)
      return d.waiting || !due;
    // A free slot: this delivery, or those waiting there (a fan-out job stands for all the
    // deliveries its transaction recorded for the endpoint).
    if (due || d.waiting) return false;
    return (await repo.waiting({ tx: this.db }, d.endpointId, 1, now)).length === 0;
  }

  /** Every delivery due by the clock; with `wait`, resolves when their attempts have finished. */
  async runDue(options: { wait?: boolean; limit?: number } = {}): Promise<number> {
    const now = this.iso();
    const ids = await repo.due({ tx: this.db }, now, options.limit ?? 500);
    // Each endpoint with deliveries waiting: its longest-waiting one (a claim takes what slots
    // are free); the rest follow as attempts finish.
    for (const endpointId of await repo.waitingEndpoints({ tx: this.db }))
      ids.push(...(await repo.waiting({ tx: this.db }, endpointId, 1, now)));
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
   * Claims, in order, `first` and then the deliveries waiting longest at the endpoint, up to `max`
   * and while the endpoint has a free slot; the caller locked the endpoint's row (PostgreSQL) and
   * read it. A delivery with nothing due stops waiting; one that finds the endpoint full waits
   * (the next attempt there to finish wakes it); an endpoint disabled or deleted closes it. The
   * claims are written together: one read of the slots, of the events, of the secrets, and one
   * update of the claimed rows, whatever their number.
   */
  private async claimFrom(
    { tx }: { tx: Tx },
    endpoint: Endpoint,
    first: Delivery[],
    max: number,
  ): Promise<Claim[]> {
    const now = this.iso();
    const live = endpoint.status === 'enabled' && !endpoint.deletedAt;
    const claims: Claim[] = [];
    const seen = new Set<number>();
    let inFlight = live ? await repo.inFlight({ tx }, endpoint.id, now) : 0;
    let secrets: string[] | undefined;
    let candidates = first;
    for (;;) {
      const waitingFlags: { id: number; values: Record<string, unknown> }[] = [];
      const flag = (d: Delivery, waiting: boolean) => {
        if (d.waiting !== waiting)
          waitingFlags.push({ id: d.id, values: { waiting, updated_at: now } });
      };
      const picked: { d: Delivery; prior: DeliveryStatus; replay: boolean; taken: boolean }[] = [];
      let full = false;
      for (const d of candidates) {
        seen.add(d.id);
        const { prior, open, replay, automatic, abandoned } = dueness(d, now);
        // Nothing to claim: it waits for nothing either.
        if (!replay && !automatic) flag(d, false);
        else if (!live) await this.close({ tx }, d.id, open ? 'canceled' : prior, now);
        else if (inFlight >= PER_ENDPOINT) {
          flag(d, true);
          full = true;
          break;
        } else if (claims.length + picked.length < max) {
          picked.push({ d, prior, replay, taken: abandoned });
          inFlight++;
        } else break;
      }
      const events = new Map(
        (
          await eventsRepo.getMany(
            { tx },
            endpoint.accountId,
            picked.map((p) => p.d.eventId),
          )
        ).map((e) => [e.id, e]),
      );
      const leaseUntil = this.iso(LEASE_MS);
      const claimed: { id: number; values: Record<string, unknown> }[] = [];
      for (const { d, prior, replay, taken } of picked) {
        const event = events.get(d.eventId);
        if (!event) {
          // Swept with its deliveries; nothing left to send.
          flag(d, false);
          inFlight--;
          continue;
        }
        secrets ??= await this.secrets({ tx }, endpoint, now);
        const owner = randomHex(8);
        claimed.push({
          id: d.id,
          values: {
            status: 'in_progress',
            prior_status: prior,
            lease_owner: owner,
            lease_until: leaseUntil,
            // Taken over from an attempt whose lease ran out: counted, as src/db/lease.ts does
            // (read under the endpoint's lock, so the count is current).
            lease_takeovers: d.leaseTakeovers + (taken ? 1 : 0),
            // If this worker dies, the recovery sweep finds the delivery once the lease has run out.
            due_at: leaseUntil,
            waiting: false,
            updated_at: now,
          },
        });
        claims.push({
          deliveryId: d.id,
          endpointId: endpoint.id,
          owner,
          origin: replay ? 'replay' : 'automatic',
          prior,
          url: endpoint.url,
          msgId: `evt_${event.id}`,
          body: envelope(event),
          secrets,
        });
      }
      await repo.updateEach({ tx }, claimed);
      await repo.updateEach({ tx }, waitingFlags);
      if (full || !live || claims.length >= max) return claims;
      const more = await repo.waitingRows({ tx }, endpoint.id, max - claims.length, now);
      candidates = more.filter((d) => !seen.has(d.id));
      if (candidates.length === 0) return claims;
    }
  }

  private async close({ tx }: { tx: Tx }, id: number, status: DeliveryStatus, now: string) {
    await repo.update({ tx }, id, {
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
  private async secrets({ tx }: { tx: Tx }, endpoint: Endpoint, now: string): Promise<string[]> {
    const rows = await endpointsRepo.activeSecrets({ tx }, endpoint.id, now);
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
    const { next, woken, look } = await this.record(claim, result);
    // Nothing was waiting when this transaction looked; one that started waiting since (without
    // the lock: nothingToDo) is seen now.
    if (look) woken.push(...(await repo.waiting({ tx: this.db }, claim.endpointId, 1, this.iso())));
    // Straight to the next attempt in this process, without a trip through the job queue. Should
    // the process stop first, the delivery is still due and the minute sweep claims it.
    for (const id of woken)
      void this.dispatch(id).catch((err) =>
        this.logger.error({ err, delivery: id }, 'webhook dispatch failed'),
      );
    return next;
  }

  /**
   * Records an attempt's outcome. Outcomes at one endpoint are written together: while one
   * transaction records some, those that finish meanwhile wait and go in the next one (a group
   * commit), so the endpoint's lock is taken once for them all, not once per attempt.
   */
  private record(claim: Claim, result: SendResult): Promise<Settled> {
    return new Promise((done, fail) => {
      const queued = this.outcomes.get(claim.endpointId);
      if (queued) return void queued.push({ claim, result, done, fail });
      this.outcomes.set(claim.endpointId, [{ claim, result, done, fail }]);
      void this.flush(claim.endpointId);
    });
  }

  private async flush(endpointId: number): Promise<void> {
    const queued = this.outcomes.get(endpointId)!;
    while (queued.length > 0) {
      const batch = queued.splice(0);
      // Nobody waits for a slot of this process: the slots may go to the endpoint's next deliveries.
      const handOver = !this.closing && this.waiters.length === 0;
      try {
        // The receiver has answered: should the database be away, the outcome waits for it
        // (while the lease lasts) rather than be lost and the delivery sent again.
        const { next, woken, look } = await whileAway(
          () => transaction(this.db, (tx) => this.finish({ tx }, batch, handOver)),
          { maxMs: LEASE_MS, stop: () => this.closing },
        );
        // Each finished attempt's slot takes one next claim; the first also wakes what is woken.
        batch.forEach((o, i) =>
          o.done({ next: next[i] ?? null, woken: i === 0 ? woken : [], look: i === 0 && look }),
        );
      } catch (err) {
        for (const o of batch) o.fail(err);
      }
    }
    this.outcomes.delete(endpointId);
  }

  /**
   * Records the attempts (of one endpoint) and what follows from each. Their endpoint's slots are
   * free again: with `handOver`, the next deliveries waiting there are claimed here (`next`, the
   * slots' next attempts); otherwise they are returned in `woken`, for dispatch() to claim.
   */
  private async finish(
    { tx }: { tx: Tx },
    outcomes: { claim: Claim; result: SendResult }[],
    handOver: boolean,
  ): Promise<{ next: Claim[]; woken: number[]; look: boolean }> {
    const none = { next: [], woken: [], look: false };
    const endpoint = (await endpointsRepo.lockRow({ tx }, outcomes[0]!.claim.endpointId))!;
    const found = await repo.getMany(
      { tx },
      outcomes.map((o) => o.claim.deliveryId),
    );
    const deliveries = new Map(found.map((d) => [d.id, d]));
    const now = this.clock.now();
    const iso = now.toISOString();
    let live = endpoint.status === 'enabled' && !endpoint.deletedAt;
    const attempts: Record<string, unknown>[] = [];
    const updates: { id: number; values: Record<string, unknown> }[] = [];
    const owners = new Map<number, string>();
    const jobs: { more: boolean; next: string | null; id: number }[] = [];
    for (const { claim, result } of outcomes) {
      const d = deliveries.get(claim.deliveryId);
      // Our lease ran out and another attempt took the delivery over: it records the outcome.
      if (!d || d.leaseOwner !== claim.owner) continue;
      const replay = claim.origin === 'replay';
      const automaticAttempts = d.automaticAttempts + (replay ? 0 : 1);
      const replaysPending = Math.max(0, d.replaysPending - (replay ? 1 : 0));
      let status: DeliveryStatus;
      let next: string | null = null;
      if (result.httpStatus === 410 && live) {
        // Gone: the receiver asks us to stop. The endpoint is disabled, its deliveries canceled.
        await endpointsRepo.update({ tx }, endpoint.id, {
          status: 'disabled',
          disabled_reason: 'endpoint_gone',
          updated_at: iso,
        });
        await repo.cancelOpen({ tx }, endpoint.id, iso);
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
      attempts.push({
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
      owners.set(d.id, claim.owner);
      updates.push({
        id: d.id,
        values: {
          status,
          attempts_count: d.attemptsCount + 1,
          automatic_attempts: automaticAttempts,
          replays_pending: live ? replaysPending : 0,
          next_attempt_at: next,
          due_at: more ? iso : next,
          delivered_at:
            status === 'delivered' ? (d.deliveredAt ?? result.finishedAt) : d.deliveredAt,
          lease_owner: null,
          lease_until: null,
          prior_status: null,
          updated_at: iso,
        },
      });
      if (more || (next && status === 'failed')) jobs.push({ more, next, id: d.id });
    }
    await repo.insertAttempts({ tx }, attempts);
    await repo.updateEach({ tx }, updates, (id) => owners.get(id)!);
    for (const job of jobs) {
      const payload = { delivery_id: job.id, endpoint_id: endpoint.id };
      if (job.more) await this.jobs.enqueue({ tx }, DELIVER_TASK, payload);
      else await this.jobs.enqueue({ tx }, DELIVER_TASK, payload, { runAt: new Date(job.next!) });
    }
    // Slots of the endpoint are free: the next deliveries that found it full take them.
    if (!live) return none;
    // Stopping: the waiting ones stay waiting (and due), for the other instances' finishing
    // attempts and the next process's sweep; taking them here would only drop them from the line.
    if (this.closing) return none;
    if (!handOver) {
      const woken = await repo.takeWaiting({ tx }, endpoint.id, 1, iso);
      return { next: [], woken, look: woken.length === 0 };
    }
    // Claimed here, under the lock this transaction holds. Whatever is not claimed here is looked
    // for again after the commit.
    const next = await this.claimFrom({ tx }, endpoint, [], updates.length);
    return { next, woken: [], look: next.length === 0 };
  }
}
