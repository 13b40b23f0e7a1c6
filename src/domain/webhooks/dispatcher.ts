// Carries out webhook deliveries (created by ./fanout.ts, with a `webhook.deliver` job per endpoint
// and transaction, in the recording transaction). The job claims the endpoint's due deliveries
// (60 s leases) and starts their HTTP attempts, then returns: the attempts run beside the job
// runner, so slow endpoints never hold the runner's few slots.
//
// Claims go through the lease primitive (src/db/lease.ts): one batch claim takes an endpoint's due
// deliveries oldest first, at most `perEndpoint` held at once (across instances: the primitive
// counts the endpoint's held rows under its advisory lock of the endpoint); a lease of a worker
// that died is taken over once it has run out, and counted in `lease_takeovers`. An endpoint that
// is full has its deliveries wait, due: each attempt there, when it finishes, records its outcome
// and claims the next due ones in the same transaction (its slot passes on, without the
// endpoint's lock: no more are claimed than released), and claims again under the lock after its
// commit when it handed on fewer than it freed, so no free slot goes unseen. Outcomes at one endpoint
// that finish while a transaction records others wait for the next one (a group commit).
//
// Scheduling is the job engine's: a retry is a job with its run_at, a replay a job. What a job
// cannot carry (an attempt whose worker died: its lease runs out; a test that moved the clock) is
// found by runDue(), the minute sweep, as a safety net.
//
// Statuses: pending -> in_progress -> delivered | failed (a retry is scheduled) -> ... -> dead
// (none is left); canceled when the endpoint is disabled or deleted. A lease that runs out (a
// worker that died) goes back at the sweep to the status before its claim, due again if an attempt
// was (runDue). Retries follow RETRY_MS from the delivery's creation; `deadline_at` is the last of
// them. Times come from the injectable clock; `due_at` says when a delivery next needs a worker.
import type { Clock } from '../../clock.ts';
import type { Db, Tx } from '../../db/engine.ts';
import { whileAway } from '../../db/pg-errors.ts';
import { transaction } from '../../db/tx.ts';
import type { JobEngine } from '../../jobs/types.ts';
import type { Logger } from '../../log.ts';
import { unseal } from '../../secrets-key.ts';
import { Lease } from '../../db/lease.ts';
import { coalesceBy } from '../shared/coalesce.ts';
import { randomHex } from '../shared/ids.ts';
import {
  deliveriesRepo as repo,
  type AttemptOrigin,
  type DeliveryStatus,
  type OutcomeRow,
} from './deliveries-repo.ts';
import { endpointsRepo } from './repo.ts';
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
  /**
   * The delivery as claimed, for its outcome: only the lease's holder changes these while the
   * lease lasts (the outcome is written only while it still holds it).
   */
  automaticAttempts: number;
  nextAttemptAt: string | null;
  createdAt: string;
}

/** What recording an attempt's outcome gives its slot: its next claim; `look`: claim again. */
interface Settled {
  next: Claim | null;
  look: boolean;
}

/** An outcome waiting for its endpoint's next group commit. */
interface Outcome {
  claim: Claim;
  result: SendResult;
  done: (settled: Settled) => void;
  fail: (err: unknown) => void;
}

/** A claim's read of its endpoint (src/domain/webhooks/repo.ts forClaim). */
type ClaimRead = NonNullable<Awaited<ReturnType<typeof endpointsRepo.forClaim>>>;

/** The longest a group commit waits for the endpoint's attempts still sending (see gather). */
const GATHER_MS = 5;

/** Opened secrets kept in memory, at most (forgotten all at once past it). */
const MAX_OPENED = 10_000;

const is2xx = (s: number | null) => s !== null && s >= 200 && s < 300;

/** The lease of an attempt on its delivery (src/db/lease.ts), grouped by endpoint. */
const leases = new Lease({
  table: 'webhook_deliveries',
  owner: 'lease_owner',
  until: 'lease_until',
  takeovers: 'lease_takeovers',
});

export class WebhookDispatcher {
  private busy = 0;
  private closing = false;
  private readonly waiters: (() => void)[] = [];
  private readonly inflight = new Set<Promise<void>>();
  /** Outcomes not yet recorded, by endpoint; present while a transaction records some. */
  private readonly outcomes = new Map<number, Outcome[]>();
  /** This process's attempts waiting for their receiver's answer, by endpoint. */
  private readonly sending = new Map<number, number>();
  /** A group commit waiting for the endpoint's attempts still sending (see gather). */
  private readonly gathering = new Map<number, () => void>();
  /** Unsealed signing secrets by endpoint and sealed value (unsealing is an AES-GCM decryption). */
  private readonly opened = new Map<string, string>();
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly jobs: JobEngine;
  readonly sender: WebhookSender;
  private readonly secretsKey: Buffer;
  private readonly logger: Logger;
  /** Attempts at once per endpoint, across instances (WEBHOOK_PER_ENDPOINT). */
  readonly perEndpoint: number;

  constructor(
    db: Db,
    clock: Clock,
    jobs: JobEngine,
    sender: WebhookSender,
    secretsKey: Buffer,
    logger: Logger,
    perEndpoint = PER_ENDPOINT,
  ) {
    this.db = db;
    this.clock = clock;
    this.jobs = jobs;
    this.sender = sender;
    this.secretsKey = secretsKey;
    this.logger = logger;
    this.perEndpoint = perEndpoint;
  }

  private iso(offsetMs = 0): string {
    return new Date(this.clock.now().getTime() + offsetMs).toISOString();
  }

  /**
   * Claims what the delivery's endpoint has due, as many as it has free slots (the deliveries
   * waiting longest first); starts those attempts and resolves once they have started, with
   * their promises (wrapped: a promise resolving to a promise would wait for it), or with null
   * when none started.
   */
  async dispatch(
    deliveryId: number,
    endpointId?: number,
  ): Promise<{ runs: Promise<void>[] } | null> {
    if (this.closing) return null;
    const id = endpointId ?? (await repo.get({ tx: this.db }, deliveryId))?.endpointId;
    return id === undefined ? null : this.dispatchEndpoint(id);
  }

  /**
   * Claims at the endpoint, one claim at a time per endpoint in this process: calls that arrive
   * while one runs share the next one, which starts after it (so it sees what was committed
   * before each of them). Jobs, the sweep and the looks after hand-overs all ask for claims; one
   * at a time each waited for the endpoint's lock behind all the others (PostgreSQL, two worker
   * processes and a burst: a queue of dozens, waits up to 200 ms).
   */
  private readonly dispatchEndpoint = coalesceBy((endpointId: number) =>
    this.claimEndpoint(endpointId),
  );

  /**
   * Read first without any lock: nothing to claim when nothing is due, or when the endpoint is
   * full. Leaving a due delivery to a full endpoint is safe: each attempt counted as held there,
   * when it finishes, hands its slot on to what is due then, and if it left a slot free it looks
   * again after its commit (so one that became due meanwhile is seen).
   */
  private async claimEndpoint(endpointId: number): Promise<{ runs: Promise<void>[] } | null> {
    // Stopping: what is due stays due, for the next process.
    if (this.closing) return null;
    const state = await repo.pressure({ tx: this.db }, endpointId, this.iso());
    if (!state || !state.due) return null;
    if (!state.live) {
      await transaction(this.db, (tx) => repo.closeDue({ tx }, endpointId, this.iso()));
      return null;
    }
    // Its account is not active (blocked, removed, unavailable): the deliveries wait, due, and
    // go out when it is active again (the accounts service's onReactivated, then WebhookFanOut.resume).
    if (!state.active) return null;
    if (state.held >= this.perEndpoint) return null;
    await this.slot();
    // More slots of this process, if free now (never waited for: the first one is enough).
    let slots = 1;
    const free = this.perEndpoint - state.held;
    while (slots < free && this.busy < PER_PROCESS && this.waiters.length === 0) {
      this.busy++;
      slots++;
    }
    let claims: Claim[];
    try {
      claims = await transaction(this.db, (tx) => this.claim({ tx }, endpointId, slots));
    } catch (err) {
      for (let i = 0; i < slots; i++) this.release();
      throw err;
    }
    for (let i = claims.length; i < slots; i++) this.release();
    if (claims.length === 0) return null;
    return { runs: claims.map((claim) => this.run(claim)) };
  }

  /** A recording transaction has just committed deliveries at the endpoint (WebhookFanOut). */
  claimSoon(endpointId: number): void {
    this.claimInBackground(endpointId);
  }

  /**
   * Claims what the endpoint has due now, not awaited; a failure is logged, and the endpoint's
   * job or the minute sweep claims it.
   */
  private claimInBackground(endpointId: number): void {
    void this.dispatchEndpoint(endpointId).catch((err) =>
      this.logger.error({ err, endpoint: endpointId }, 'webhook dispatch failed'),
    );
  }

  private run(claim: Claim): Promise<void> {
    const run = this.attempts(claim).finally(() => {
      this.inflight.delete(run);
      this.release();
    });
    this.inflight.add(run);
    return run;
  }

  /** Every endpoint with something due by the clock; with `wait`, resolves when their attempts have finished. */
  async runDue(options: { wait?: boolean; limit?: number } = {}): Promise<number> {
    // Attempts whose lease ran out are no longer under way (see deliveriesRepo.releaseExpired).
    await transaction(this.db, (tx) => repo.releaseExpired({ tx }, this.iso()));
    const endpoints = await repo.dueEndpoints({ tx: this.db }, this.iso(), options.limit ?? 500);
    const runs: Promise<void>[] = [];
    for (const id of endpoints) {
      const started = await this.dispatchEndpoint(id);
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
   * The endpoint, its account's state and its signing secrets, read taking the endpoint's lock
   * (PostgreSQL), or without it for a hand-over (see finish).
   */
  private read(
    { tx }: { tx: Tx },
    endpointId: number,
    now: string,
    lock = true,
  ): Promise<ClaimRead | null> {
    const locking = lock ? leases.groupLock({ tx }, endpointId) : null;
    return endpointsRepo.forClaim({ tx }, endpointId, now, locking);
  }

  /**
   * Claims up to `max` of the endpoint's due deliveries, oldest first, while it has free slots,
   * in the caller's transaction: one statement reads the endpoint with its secrets and waits for
   * its lock (PostgreSQL), one counts the endpoint's held deliveries, chooses and claims the
   * candidates and reads their events (the lease primitive's `lockedGroup`; SQLite: a read and an
   * update), whatever their number. An endpoint that no longer sends closes what is due there
   * instead. `handOver`: the caller released `max` of the endpoint's leases earlier in this
   * transaction and does not hold the lock (the lease primitive's `handOver`).
   */
  private async claim(
    { tx }: { tx: Tx },
    endpointId: number,
    max: number,
    /** Read by the caller in this transaction (this.read: the lock is held, or `handOver`). */
    read?: ClaimRead,
    handOver = false,
  ): Promise<Claim[]> {
    const now = this.iso();
    const found = read ?? (await this.read({ tx }, endpointId, now));
    if (!found) return [];
    const { endpoint } = found;
    // Not active: nothing is sent, nothing closed; what is due waits (see dispatchEndpoint).
    if (!found.accountActive) return [];
    if (endpoint.status !== 'enabled' || endpoint.deletedAt) {
      await repo.closeDue({ tx }, endpointId, now);
      return [];
    }
    const until = this.iso(LEASE_MS);
    const owner = `${this.jobs.workerId}/${randomHex(6)}`;
    const rows = await leases.claimBatchRows(
      { tx },
      { owner, now, until },
      {
        group: 'endpoint_id',
        perGroup: this.perEndpoint,
        limit: max,
        orderBy: ['due_at', 'id'],
        where: repo.dueAt(endpointId, now),
        set: repo.claimed(until, now),
        columns: ['*', ...repo.eventColumns],
        // One endpoint: the first `max` due are the ones to claim.
        candidates: max,
        ...(handOver ? { handOver: endpointId } : { lockedGroup: endpointId }),
      },
    );
    if (rows.length === 0) return [];
    const secrets = this.secrets(endpoint.id, found.sealed);
    const claims: Claim[] = [];
    for (const row of rows) {
      const d = repo.map(row);
      const prior = d.status === 'in_progress' ? (d.priorStatus ?? 'failed') : d.status;
      const event = repo.event(row);
      if (!event) {
        // Swept with its deliveries meanwhile; nothing left to send.
        await this.close({ tx }, d.id, prior, now);
        continue;
      }
      claims.push({
        deliveryId: d.id,
        endpointId: endpoint.id,
        owner,
        origin: d.replaysPending > 0 ? 'replay' : 'automatic',
        prior,
        url: endpoint.url,
        msgId: `evt_${event.id}`,
        body: envelope(event),
        secrets,
        automaticAttempts: d.automaticAttempts,
        nextAttemptAt: d.nextAttemptAt,
        createdAt: d.createdAt,
      });
    }
    return claims;
  }

  /** Whether the attempt still holds its delivery's lease (not taken over meanwhile). */
  private async holds({ tx }: { tx: Tx }, claim: Claim): Promise<boolean> {
    return (await repo.get({ tx }, claim.deliveryId))?.leaseOwner === claim.owner;
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
  private secrets(endpointId: number, sealed: string[]): string[] {
    return sealed.map((value) => {
      const key = `${endpointId}:${value}`;
      let secret = this.opened.get(key);
      if (secret === undefined) {
        secret = unseal(this.secretsKey, value, secretContext(endpointId));
        if (this.opened.size >= MAX_OPENED) this.opened.clear();
        this.opened.set(key, secret);
      }
      return secret;
    });
  }

  /**
   * Runs the attempt, then the next one its endpoint had due, if finishing the first claimed it
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
    const id = claim.endpointId;
    this.sending.set(id, (this.sending.get(id) ?? 0) + 1);
    let result: SendResult;
    try {
      result = await this.sender.send(claim.url, headers, claim.body);
    } finally {
      const left = this.sending.get(id)! - 1;
      if (left > 0) this.sending.set(id, left);
      else this.sending.delete(id);
    }
    const { next, look } = await this.record(claim, result);
    // A slot was left free: what became due since the claim looked (or what this process had no
    // slot for) is claimed now, after the commit. Should the process stop first, the delivery is
    // still due and the minute sweep claims it.
    if (look) this.claimInBackground(claim.endpointId);
    return next;
  }

  /**
   * Records an attempt's outcome. Outcomes at one endpoint are written together: while one
   * transaction records some, those that finish meanwhile wait and go in the next one (a group
   * commit), so the endpoint's next claim is made once for them all, not once per attempt.
   */
  private record(claim: Claim, result: SendResult): Promise<Settled> {
    return new Promise((done, fail) => {
      const queued = this.outcomes.get(claim.endpointId);
      if (queued) {
        queued.push({ claim, result, done, fail });
        if (!this.sending.has(claim.endpointId)) this.gathering.get(claim.endpointId)?.();
        return;
      }
      this.outcomes.set(claim.endpointId, [{ claim, result, done, fail }]);
      void this.flush(claim.endpointId);
    });
  }

  /**
   * Before a group commit: while other attempts of this process at the endpoint still wait for
   * their answer, waits for them, at most GATHER_MS. With a handful of slots per endpoint and a
   * transaction longer than a local request, the attempts claimed by one commit otherwise
   * finish during the next and always go in the one after it, two groups taking turns; waiting
   * for them puts every slot's outcome in one transaction (PostgreSQL: round trips per delivery
   * halved at the default limit of 4).
   */
  private gather(endpointId: number): Promise<void> {
    // The attempts that the last commit handed slots to start sending after this turn.
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        if (!this.sending.has(endpointId) || this.closing) return resolve();
        const timer = setTimeout(wake, GATHER_MS);
        const gathering = this.gathering;
        function wake() {
          clearTimeout(timer);
          gathering.delete(endpointId);
          resolve();
        }
        this.gathering.set(endpointId, wake);
      }),
    );
  }

  private async flush(endpointId: number): Promise<void> {
    const queued = this.outcomes.get(endpointId)!;
    while (queued.length > 0) {
      await this.gather(endpointId);
      const batch = queued.splice(0);
      // Nobody waits for a slot of this process: the slots may go to the endpoint's next deliveries.
      const handOver = !this.closing && this.waiters.length === 0;
      try {
        // The receiver has answered: should the database be away, the outcome waits for it
        // (while the lease lasts) rather than be lost and the delivery sent again.
        const { next, look } = await whileAway(
          () => transaction(this.db, (tx) => this.finish({ tx }, batch, handOver)),
          { maxMs: LEASE_MS, stop: () => this.closing },
        );
        // Each finished attempt's slot takes one next claim; the first also looks again.
        batch.forEach((o, i) => o.done({ next: next[i] ?? null, look: i === 0 && look }));
      } catch (err) {
        for (const o of batch) o.fail(err);
      }
    }
    this.outcomes.delete(endpointId);
  }

  /**
   * Records the attempts (of one endpoint), releasing their leases, and what follows from each
   * (a retry or a replay: a job). With `handOver`, their slots go to the endpoint's next due
   * deliveries, claimed here (`next`); `look` when a slot was left over (or not handed over).
   * PostgreSQL, for any number of outcomes: BEGIN, the endpoint, the outcomes (deliveries and
   * attempts), the claim, COMMIT; a job per retry or replay left.
   */
  private async finish(
    { tx }: { tx: Tx },
    outcomes: { claim: Claim; result: SendResult }[],
    handOver: boolean,
  ): Promise<{ next: Claim[]; look: boolean }> {
    const endpointId = outcomes[0]!.claim.endpointId;
    // The endpoint, for the outcomes and the hand-over claim, without its lock: the claim takes
    // no more slots than the outcomes release in this transaction, so the endpoint's count of
    // attempts under way never grows here, and finishing attempts at one endpoint in several
    // instances commit side by side instead of one after the other (one commit per process and
    // endpoint at a time: this.outcomes).
    const read = (await this.read({ tx }, endpointId, this.iso(), false))!;
    const { endpoint } = read;
    const now = this.clock.now();
    const iso = now.toISOString();
    let live = endpoint.status === 'enabled' && !endpoint.deletedAt;
    // No read of the deliveries: what the outcome depends on comes with the claim (only the
    // lease's holder changes it), and the write is guarded by the lease and relative to the row
    // where others may write meanwhile (a replay asked: deliveriesRepo.recordOutcomes).
    const rows: OutcomeRow[] = [];
    for (const { claim, result } of outcomes) {
      const replay = claim.origin === 'replay';
      const automaticAttempts = claim.automaticAttempts + (replay ? 0 : 1);
      let status: DeliveryStatus;
      let next: string | null = null;
      if (result.httpStatus === 410 && live && (await this.holds({ tx }, claim))) {
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
        next = claim.prior === 'pending' || claim.prior === 'failed' ? claim.nextAttemptAt : null;
      } else if (automaticAttempts <= RETRY_MS.length) {
        status = 'failed';
        const offset = RETRY_MS.slice(0, automaticAttempts).reduce((a, b) => a + b, 0);
        next = new Date(
          Math.max(Date.parse(claim.createdAt) + offset, now.getTime()),
        ).toISOString();
      } else status = 'dead';
      rows.push({
        id: claim.deliveryId,
        owner: claim.owner,
        live,
        replay: replay ? 1 : 0,
        automatic: replay ? 0 : 1,
        status,
        next_attempt_at: next,
        delivered_at: status === 'delivered' ? result.finishedAt : null,
        origin: claim.origin,
        http_status: result.httpStatus,
        duration_ms: result.durationMs,
        started_at: result.startedAt,
        finished_at: result.finishedAt,
        response_excerpt: result.responseExcerpt,
        transport_error: result.transportError,
      });
    }
    const byId = new Map(rows.map((r) => [r.id, r]));
    // Only the deliveries whose lease was still the attempt's were written (and released).
    const released = await repo.recordOutcomes({ tx }, rows, iso);
    for (const { id, replaysPending } of released) {
      const r = byId.get(id)!;
      const payload = { delivery_id: id, endpoint_id: endpoint.id };
      // A replay left (asked before or during this attempt): due now, a job for it.
      if (r.live && replaysPending > 0) await this.jobs.enqueue({ tx }, DELIVER_TASK, payload);
      else if (r.next_attempt_at && r.status === 'failed')
        await this.jobs.enqueue({ tx }, DELIVER_TASK, payload, {
          runAt: new Date(r.next_attempt_at),
        });
    }
    // Stopping, or the endpoint no longer sends: nothing more is claimed here. (Stopping, what is
    // due stays due, for the other instances' finishing attempts and the next process's sweep.)
    if (!live || this.closing) return { next: [], look: false };
    // This process has callers waiting for slots: the endpoint's next ones wait their turn.
    if (!handOver) return { next: [], look: true };
    if (!read.accountActive) return { next: [], look: false };
    // As many as were released, at most: a lease taken over meanwhile (it ran out) freed no slot.
    const next =
      released.length > 0 ? await this.claim({ tx }, endpoint.id, released.length, read, true) : [];
    return { next, look: next.length < outcomes.length };
  }
}
