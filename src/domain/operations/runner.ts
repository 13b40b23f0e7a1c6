// Runs an operation's items. One attempt holds the operation's lease at a time; items go in chunks,
// and each chunk commits its items' effects, their statuses, the counters and the lease renewal in
// one transaction. A worker killed mid-batch (kill -9) therefore loses nothing and applies nothing
// twice: the next attempt starts at the first item still pending. An attempt whose lease was taken
// over finds out when it renews, and its chunk rolls back.
import type { Clock } from '../../clock.ts';
import { isPostgres, type Db } from '../../db/engine.ts';
import { leaseWrite } from '../../db/lease.ts';
import { transaction } from '../../db/tx.ts';
import { isAppError } from '../../errors.ts';
import { errorMessage } from '../../i18n/messages.ts';
import { JobReleased, type TaskContext } from '../../jobs/types.ts';
import { isDeadWorker } from '../../jobs/worker-id.ts';
import { randomHex } from '../shared/ids.ts';
import type { BatchType, BatchTypes } from './batch-types.ts';
import { operationsRepo as repo, TERMINAL, type ErrorBody, type Item } from './repo.ts';
import { noEvents, type EventRecorder } from '../events/types.ts';

/** How long a silent attempt keeps the operation; renewed with every chunk. */
export const LEASE_MS = 30_000;
/** Items per transaction: fewer commits, and a cancellation is seen within one chunk. */
const CHUNK = 25;
/**
 * Items per transaction of a set-based chunk (applyMany): its cost is a fixed number of round
 * trips, so a longer chunk spreads them over more items. A type may take more on PostgreSQL
 * (BatchType.setChunk).
 */
const SET_CHUNK = 100;

class OwnershipLost extends Error {}
/** applyMany said the chunk cannot go set-based: roll it back, then item by item. */
class Declined extends Error {}

/** The attempt a chunk belongs to. */
interface Run {
  id: number;
  accountId: number;
  attempt: number;
  owner: string;
}

const describe = (err: unknown): ErrorBody =>
  isAppError(err)
    ? { code: err.code, message: errorMessage(err.code, 'en-US', err.params) }
    : { code: 'internal_error', message: errorMessage('internal_error', 'en-US') };

export class OperationRunner {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly types: BatchTypes;
  private readonly events: EventRecorder;
  constructor(db: Db, clock: Clock, types: BatchTypes, events: EventRecorder = noEvents) {
    this.db = db;
    this.clock = clock;
    this.types = types;
    this.events = events;
  }

  private leaseUntil(): string {
    return new Date(this.clock.now().getTime() + LEASE_MS).toISOString();
  }

  async run(operationId: number, ctx: TaskContext): Promise<void> {
    // One owner per run, not per worker: two jobs of one operation in the same worker (a recovery
    // beside the original) must not both hold the lease. It starts with the worker id, so a run
    // of a dead process is recognized as such.
    const owner = `${ctx.workerId}/${randomHex(4)}`;
    const op = await repo.get({ tx: this.db }, operationId);
    if (!op || (TERMINAL as readonly string[]).includes(op.status)) return;
    const now = this.clock.now().toISOString();
    const dead = isDeadWorker(op.leaseOwner) ? op.leaseOwner : null;
    const claimed = await transaction(this.db, async (tx) => {
      // A lease taken over (expired, or its worker dead) is counted in the row.
      if (!(await repo.claim({ tx }, op.id, owner, now, this.leaseUntil(), dead)).claimed)
        return false;
      await repo.setAttemptStatus({ tx }, op.id, op.attemptNumber, 'running', { started: now });
      return true;
    });
    // Another live attempt holds it; should it die, its lease runs out and the recovery sweep
    // enqueues the operation again.
    if (!claimed) return;
    try {
      await this.items(op.id, op.accountId, op.type, op.attemptNumber, owner, ctx.signal);
    } catch (err) {
      if (err instanceof OwnershipLost) return; // the other attempt records the outcome
      // Released for the job's next try, which claims it again; with the database away, once it
      // is back (else the operation would wait for its lease to run out and the recovery sweep).
      await leaseWrite(this.db, (tx) => repo.releaseLease({ tx }, op.id, owner), {
        maxMs: LEASE_MS,
        stop: () => ctx.signal.aborted,
      }).catch(() => undefined);
      throw err;
    }
  }

  private async items(
    id: number,
    accountId: number,
    typeName: string,
    attempt: number,
    owner: string,
    signal: AbortSignal,
  ) {
    const type = Object.hasOwn(this.types, typeName) ? this.types[typeName] : undefined;
    if (!type) throw new Error(`unknown batch type ${typeName}`);
    // SQLite keeps the item-by-item path unless the type asks: its statements are function calls
    // in this process, so a chunk's round trips cost little there (spec/DECISIONS.md).
    const setBased =
      type.applyMany && !type.prepare && (isPostgres(this.db) || type.setBasedOnSqlite === true);
    const setChunk = isPostgres(this.db) ? (type.setChunk ?? SET_CHUNK) : SET_CHUNK;
    const chunk = type.prepare ? 1 : setBased ? setChunk : CHUNK;
    for (;;) {
      if (signal.aborted) {
        // Stopping: the items done so far are committed; the job runs again and goes on from here.
        await transaction(this.db, (tx) => repo.releaseLease({ tx }, id, owner));
        throw new JobReleased();
      }
      const current = await repo.get({ tx: this.db }, id);
      if (!current || current.leaseOwner !== owner) throw new OwnershipLost();
      if (current.cancellationRequested) return this.finish(id, owner, attempt, 'canceled');
      const batch = await repo.pendingItems({ tx: this.db }, id, chunk);
      if (batch.length === 0) return this.finish(id, owner, attempt, null);
      const run = { id, accountId, attempt, owner };
      if (setBased && (await this.allAtOnce(type, run, batch))) continue;
      // Item by item, CHUNK items a transaction (a set-based chunk that declined is longer).
      for (let i = 0; i < batch.length; i += CHUNK) {
        const transient = await this.oneByOne(type, run, batch.slice(i, i + CHUNK));
        if (transient) return this.finish(id, owner, attempt, 'failed', transient);
      }
    }
  }

  /**
   * The chunk through the type's applyMany, with the items' statuses, the counters and the lease
   * renewal in the same transaction (the last two in one statement). False when it declined or
   * failed: nothing of it was committed, and the caller applies the chunk item by item, where an
   * item that fails fails alone.
   */
  private async allAtOnce(type: BatchType, run: Run, batch: Item[]): Promise<boolean> {
    try {
      return await transaction(this.db, async (tx) => {
        const payloads = batch.map((item) => item.payload);
        const results = await type.applyMany!(tx, run.accountId, payloads, {
          operationId: run.id,
        });
        if (!results) throw new Declined();
        const settled = await repo.settleChunk({ tx }, run.id, run.owner, this.leaseUntil(), {
          attempt: run.attempt,
          at: this.clock.now().toISOString(),
          items: batch.map((item, i) => ({ id: item.id, result: JSON.stringify(results[i]) })),
        });
        if (!settled) throw new OwnershipLost();
        return true;
      });
    } catch (err) {
      if (err instanceof OwnershipLost) throw err;
      return false;
    }
  }

  /** The chunk item by item, each in a savepoint; the first transient failure stops the attempt. */
  private async oneByOne(type: BatchType, run: Run, batch: Item[]): Promise<ErrorBody | null> {
    const { id, accountId, attempt, owner } = run;
    // Outside the transaction: a prepared item reads or writes for long (one item per chunk).
    const prepared = new Map<number, { value?: unknown; error?: unknown }>();
    if (type.prepare)
      for (const item of batch)
        prepared.set(
          item.id,
          await type.prepare(accountId, item.payload, { operationId: id }).then(
            (value) => ({ value }),
            (error) => ({ error }),
          ),
        );
    return transaction(this.db, async (tx) => {
      const at = this.clock.now().toISOString();
      let done = 0;
      let failed = 0;
      let stop: ErrorBody | null = null;
      for (const item of batch) {
        // On SQLite every statement is synchronous, so a chunk of heavy items (a scenario's
        // students) would hold the event loop for its whole length: requests, keep-alive
        // timers and probes wait behind it. Other work gets a turn between items.
        await new Promise((r) => setImmediate(r));
        try {
          const prep = prepared.get(item.id);
          if (prep && 'error' in prep) throw prep.error;
          const result = await tx.transaction((inner) =>
            type.apply(inner, accountId, item.payload, {
              operationId: id,
              prepared: prep?.value,
            }),
          );
          await repo.updateItem({ tx }, item.id, {
            status: 'succeeded',
            result: JSON.stringify(result),
            attempt_number: attempt,
            updated_at: at,
          });
          done++;
        } catch (err) {
          if (err instanceof OwnershipLost) throw err;
          // A business rejection is final for the item; anything else may pass on another try,
          // so the attempt stops there and the operation can be resumed. A 503 (a store or
          // service that failed or timed out: storage_unavailable) is not a rejection.
          const retryable = !isAppError(err) || err.status === 503;
          await type.failed?.(tx, accountId, item.payload, err);
          await repo.updateItem({ tx }, item.id, {
            status: 'failed',
            error: JSON.stringify(describe(err)),
            retryable,
            attempt_number: attempt,
            updated_at: at,
          });
          failed++;
          if (retryable) {
            stop = describe(err);
            break;
          }
        }
      }
      if (!(await repo.renew({ tx }, id, owner, this.leaseUntil(), done, failed)))
        throw new OwnershipLost();
      return stop;
    });
  }

  private async finish(
    id: number,
    owner: string,
    attempt: number,
    forced: 'canceled' | 'failed' | null,
    error: ErrorBody | null = null,
  ): Promise<void> {
    const now = this.clock.now().toISOString();
    await transaction(this.db, async (tx) => {
      const op = (await repo.get({ tx }, id))!;
      let status: string = forced ?? 'succeeded';
      if (!forced && op.failed > 0) {
        status = op.done > 0 ? 'partially_succeeded' : 'failed';
        if (status === 'failed')
          error = {
            code: 'domain_rule_violation',
            message: "Every item failed; each item's error says why.",
          };
      }
      if (status === 'canceled') await repo.cancelPending({ tx }, id, now);
      const changed = await repo.update(
        { tx },
        id,
        {
          status,
          finished_at: now,
          lease_owner: null,
          lease_expires_at: null,
          error: error ? JSON.stringify(error) : null,
        },
        { owner },
      );
      if (!changed) throw new OwnershipLost();
      await repo.setAttemptStatus({ tx }, id, attempt, status, { finished: now });
      const done = (await repo.get({ tx }, id))!;
      await this.events.record(
        { tx },
        {
          accountId: done.accountId,
          type: 'operation.finished',
          data: {
            operation: {
              id: String(id),
              type: done.type,
              status,
              progress: { total: done.total, done: done.done, failed: done.failed },
              finished_at: now,
            },
          },
        },
      );
    });
  }

  /** Running operations whose worker is gone: returns their ids so they can be enqueued again. */
  async orphans(): Promise<number[]> {
    const now = this.clock.now().toISOString();
    const expired = await repo.orphaned({ tx: this.db }, now);
    const dead = (await repo.leaseOwners({ tx: this.db })).filter((o) => isDeadWorker(o.owner));
    return [...new Set([...expired.map((o) => o.id), ...dead.map((o) => o.id)])];
  }
}
