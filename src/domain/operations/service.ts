// Asynchronous operations: a batch (or a publication, a sandbox reset) is recorded with its items
// and first attempt, and a job that runs it is enqueued in the same transaction. The states are
// the specification's Operation table; DECISIONS.md ("Operations") says what it left open.
import type { Clock } from '../../clock.ts';
import { DAY } from '../../clock.ts';
import type { Db, Tx } from '../../db/engine.ts';
import { inTransaction } from '../../db/tx.ts';
import { AppError, type ErrorDetail } from '../../errors.ts';
import type { JobEngine } from '../../jobs/types.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { PageResult } from '../../db/page.ts';
import { hasPermission, type AuthContext } from '../credentials/auth.ts';
import type { BatchTypes } from './batch-types.ts';
import { operationsRepo as repo, TERMINAL, type Item, type Operation } from './repo.ts';
import { noEvents, type EventRecorder } from '../events/types.ts';

export const RETENTION_MS = 30 * DAY;
/** Unfinished operations per account and environment (the specification's Limits). */
export const MAX_OPEN = 100;
export const RUN_TASK = 'operation.run';

export interface BatchInput {
  type: string;
  items: { key: string; payload: Record<string, unknown> }[];
}

/** Checks an item's payload against its type's schema; returns the problems, if any. */
export type PayloadCheck = (type: string, payload: unknown, at: string) => ErrorDetail[];

export class OperationsService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly jobs: JobEngine;
  private readonly cursors: CursorCodec;
  readonly types: BatchTypes;
  private readonly events: EventRecorder;
  constructor(
    db: Db,
    clock: Clock,
    jobs: JobEngine,
    cursors: CursorCodec,
    types: BatchTypes,
    events: EventRecorder = noEvents,
  ) {
    this.db = db;
    this.clock = clock;
    this.jobs = jobs;
    this.cursors = cursors;
    this.types = types;
    this.events = events;
  }

  /** The items in batch order, a page at a time. */
  async items(
    accountId: number,
    id: number | null,
    q: { status?: string; limit?: number; cursor?: string },
  ): Promise<PageResult<Item>> {
    const op = await this.get(accountId, id);
    const { limit, cursor } = q;
    return repo.itemsPage(
      { tx: this.db },
      this.cursors,
      op.id,
      { status: q.status },
      { limit, cursor },
    );
  }

  async get(
    accountId: number,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<Operation> {
    const op = id === null ? null : await repo.get({ tx }, id, accountId);
    if (!op) throw new AppError('not_found');
    return op;
  }

  private publicTypes(): string[] {
    return Object.keys(this.types).filter((name) => !this.types[name]!.internal);
  }

  async createBatch(
    auth: AuthContext,
    input: BatchInput,
    opts: { tx?: Tx; check?: PayloadCheck } = {},
  ): Promise<Operation> {
    // Own keys only: `constructor`, `__proto__` or `toString` must not find Object.prototype's.
    const type = Object.hasOwn(this.types, input.type) ? this.types[input.type] : undefined;
    if (!type || type.internal) {
      throw new AppError('operation_type_unknown', {
        details: [
          // The types a client may submit; the internal ones (resets, replays) are not its to name.
          { field: 'type', code: 'invalid_value', message: this.publicTypes().join(', ') },
        ],
      });
    }
    if (!hasPermission(auth.credential.permissions, type.permission)) {
      throw new AppError('permission_denied', {
        details: [
          { code: 'missing_permission', message: type.permission, reason: type.permission },
        ],
      });
    }
    if (input.items.length > type.maxItems) {
      throw new AppError('too_many_items', {
        details: [
          { field: 'items', code: 'too_many_items', message: `At most ${type.maxItems} items.` },
        ],
      });
    }
    const seen = new Map<string, number>();
    const duplicates: ErrorDetail[] = [];
    input.items.forEach((item, i) => {
      if (seen.has(item.key))
        duplicates.push({
          field: `items.${i}.key`,
          code: 'duplicate_item_key',
          message: `Same key as items.${seen.get(item.key)}.`,
        });
      else seen.set(item.key, i);
    });
    if (duplicates.length)
      throw new AppError('duplicate_item_key', { details: duplicates.slice(0, 100) });
    if (opts.check) {
      const problems = input.items.flatMap((item, i) =>
        opts.check!(input.type, item.payload, `items.${i}.payload`),
      );
      if (problems.length) throw new AppError('item_invalid', { details: problems.slice(0, 100) });
    }
    return this.open(auth, input.type, input.items, { tx: opts.tx });
  }

  /** Records a queued operation with its items and first attempt, and enqueues its run. */
  async open(
    auth: AuthContext,
    type: string,
    items: { key: string; payload: unknown }[],
    { tx }: { tx?: Tx } = {},
  ): Promise<Operation> {
    const fill = async (tx: Tx, id: number, now: string) => {
      await repo.insertItems({ tx }, id, items, now);
      return items.length;
    };
    return this.openWith(auth, type, fill, { tx, knownTotal: items.length });
  }

  /**
   * Like open, but `fill` writes the items itself (an INSERT ... SELECT of many rows that never
   * pass through memory) and returns how many it wrote.
   */
  async openWith(
    auth: AuthContext,
    type: string,
    fill: (tx: Tx, operationId: number, now: string) => Promise<number>,
    { tx: outer, knownTotal }: { tx?: Tx; knownTotal?: number } = {},
  ): Promise<Operation> {
    const now = this.clock.now();
    return inTransaction(this.db, outer, async (tx) => {
      const environment = auth.credential.environment;
      if ((await repo.countOpen({ tx }, auth.account.id, environment)) >= MAX_OPEN)
        throw new AppError('operation_backlog_exceeded');
      const id = await repo.insert(
        { tx },
        {
          accountId: auth.account.id,
          environment,
          credentialId: auth.credential.id,
          type,
          total: knownTotal ?? 0,
          now: now.toISOString(),
          expiresAt: new Date(now.getTime() + RETENTION_MS).toISOString(),
        },
      );
      const total = await fill(tx, id, now.toISOString());
      if (total !== knownTotal) await repo.update({ tx }, id, { total });
      await repo.insertAttempt({ tx }, id, 1, 'automatic', now.toISOString());
      await this.jobs.enqueue({ tx }, RUN_TASK, { operation_id: id });
      return (await repo.get({ tx }, id))!;
    });
  }

  /** Queued: canceled at once. Running: stops between items. Finished: 422. */
  async cancel(accountId: number, id: number | null, opts: { tx?: Tx } = {}): Promise<Operation> {
    const now = this.clock.now().toISOString();
    return inTransaction(this.db, opts.tx, async (tx) => {
      const op = await this.get(accountId, id, { tx });
      if ((TERMINAL as readonly string[]).includes(op.status))
        throw new AppError('operation_not_cancelable');
      const canceledNow = await repo.update(
        { tx },
        op.id,
        { status: 'canceled', cancellation_requested: true, finished_at: now },
        { status: ['queued'] },
      );
      if (canceledNow) {
        await repo.cancelPending({ tx }, op.id, now);
        await repo.setAttemptStatus({ tx }, op.id, op.attemptNumber, 'canceled', { finished: now });
        // Canceled before it ran: finished all the same (the runner announces the others).
        await this.events.record(
          { tx },
          {
            accountId,
            type: 'operation.finished',
            data: {
              operation: {
                id: String(op.id),
                type: op.type,
                status: 'canceled',
                progress: { total: op.total, done: op.done, failed: op.failed },
                finished_at: now,
              },
            },
          },
        );
      } else {
        // Running: the worker sees the flag before its next chunk of items.
        await repo.update({ tx }, op.id, { cancellation_requested: true });
      }
      return (await repo.get({ tx }, op.id))!;
    });
  }

  /** A failed operation with pending or retryable items runs again; successful items do not. */
  async resume(accountId: number, id: number | null, opts: { tx?: Tx } = {}): Promise<Operation> {
    const now = this.clock.now().toISOString();
    return inTransaction(this.db, opts.tx, async (tx) => {
      const op = await this.get(accountId, id, { tx });
      if (op.status !== 'failed' || (await repo.countRecoverable({ tx }, op.id)) === 0)
        throw new AppError('operation_not_resumable');
      const number = op.attemptNumber + 1;
      const retried = await repo.requeueRetryable({ tx }, op.id, now);
      const changed = await repo.update(
        { tx },
        op.id,
        {
          status: 'queued',
          attempt_number: number,
          failed: op.failed - retried,
          error: null,
          finished_at: null,
          lease_owner: null,
          lease_expires_at: null,
        },
        { status: ['failed'] },
      );
      if (!changed) throw new AppError('operation_not_resumable');
      await repo.insertAttempt({ tx }, op.id, number, 'manual', now);
      await this.jobs.enqueue({ tx }, RUN_TASK, { operation_id: op.id });
      return (await repo.get({ tx }, op.id))!;
    });
  }

  attempts(accountId: number, id: number | null) {
    return this.get(accountId, id).then((op) => repo.attempts({ tx: this.db }, op.id));
  }

  /** Operations are kept 30 days from creation (`expires_at`). */
  purgeExpired(): Promise<number> {
    return inTransaction(this.db, undefined, (tx) =>
      repo.purgeExpired({ tx }, this.clock.now().toISOString()),
    );
  }
}
