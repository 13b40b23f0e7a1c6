// The batch types of POST /operations/batches: the permission each needs besides
// operations.manage, how many items it takes, and what one item does. An item's effect runs in the
// transaction that records its status, so it is applied exactly once.
import type { Tx } from '../../db/engine.ts';
import { fromId, toId } from '../shared/ids.ts';
import type { UsersService } from '../users/service.ts';
import type { TagsService } from '../tags/service.ts';

export interface BatchType {
  permission: string;
  maxItems: number;
  /** Started by its own route only (a sandbox reset), never through POST /operations/batches. */
  internal?: boolean;
  /**
   * Long work of one item that must not hold a write transaction (reading a whole file, writing
   * an export): run before the item's transaction, its value handed to `apply`. It must be safe
   * to run again (a worker may die after it and before the item commits). Throws to fail the item.
   */
  prepare?(accountId: number, payload: any, ctx: { operationId: number }): Promise<unknown>;
  /** Applies one item; returns what the item's `result` shows. Throws AppError to fail it. */
  apply(
    tx: Tx,
    accountId: number,
    payload: any,
    ctx: { operationId: number; prepared?: unknown },
  ): Promise<Record<string, unknown>>;
  /**
   * Optional, PostgreSQL only: applies a whole chunk with set-based SQL (one lookup, one multi-row
   * write per table) in the chunk's transaction; returns each item's result, in order. Null, or a
   * throw, when the chunk cannot go this way (an item would fail, two items touch one row, a
   * concurrent write): the runner rolls the chunk back and applies it item by item with `apply`.
   * Must write exactly what `apply` would write item after item (rows, events, their jobs).
   */
  applyMany?(
    tx: Tx,
    accountId: number,
    payloads: any[],
    ctx: { operationId: number },
  ): Promise<Record<string, unknown>[] | null>;
  /** Records, in the transaction that fails the item, what the failure means to its owner. */
  failed?(tx: Tx, accountId: number, payload: any, err: unknown): Promise<void>;
}

export type BatchTypes = Record<string, BatchType>;

export interface BatchDeps {
  users: UsersService;
  tags: TagsService;
  /** Publishes a product and its modules (and their copies in replica accounts). */
  publishProduct?: (tx: Tx, accountId: number, productId: number | null) => Promise<unknown>;
  /** Grants a student access to a product (`enrollments.grant`): creates or renews. */
  grantEnrollment?: (
    tx: Tx,
    accountId: number,
    payload: any,
  ) => Promise<{ enrollment: { id: number }; created: boolean }>;
  /** Empties a sandbox account's data, all but the operation doing it. */
  resetSandbox?: (
    tx: Tx,
    accountId: number,
    operationId: number,
  ) => Promise<Record<string, number>>;
  /** Applies one item of a sandbox scenario (its reset, or one part of its data). */
  loadScenario?: (
    tx: Tx,
    accountId: number,
    payload: any,
    operationId: number,
  ) => Promise<Record<string, unknown>>;
  /** Adds a replay attempt to one webhook delivery (webhook.replay, started by its own route). */
  replayDelivery?: (
    tx: Tx,
    accountId: number,
    deliveryId: number | null,
  ) => Promise<{ eventId: number }>;
}

export function batchTypes(deps: BatchDeps): BatchTypes {
  const types: BatchTypes = {
    'users.upsert': {
      permission: 'users.write',
      maxItems: 1000,
      async apply(tx, accountId, payload) {
        const { user, created } = await deps.users.upsertByEmail(accountId, payload, { tx });
        return { user_id: toId(user.id), created };
      },
      async applyMany(tx, accountId, payloads) {
        const out = await deps.users.upsertManyByEmail(accountId, payloads, { tx });
        return out && out.map(({ user, created }) => ({ user_id: toId(user.id), created }));
      },
    },
    'tags.assign': {
      permission: 'users.write',
      maxItems: 1000,
      async apply(tx, accountId, payload) {
        const tag = await deps.tags.assign(
          accountId,
          fromId(payload.user_id),
          fromId(payload.tag_id),
          {
            tx,
          },
        );
        return { user_id: payload.user_id, tag_id: toId(tag.id) };
      },
    },
  };
  if (deps.publishProduct) {
    const publish = deps.publishProduct;
    types['product.publish_all'] = {
      permission: 'products.write',
      maxItems: 1,
      async apply(tx, accountId, payload) {
        await publish(tx, accountId, fromId(payload.product_id));
        return { product_id: payload.product_id };
      },
    };
  }
  if (deps.grantEnrollment) {
    const grant = deps.grantEnrollment;
    types['enrollments.grant'] = {
      permission: 'enrollments.write',
      maxItems: 1000,
      async apply(tx, accountId, payload) {
        const { enrollment, created } = await grant(tx, accountId, payload);
        return { enrollment_id: toId(enrollment.id), created };
      },
    };
  }
  if (deps.resetSandbox) {
    const reset = deps.resetSandbox;
    types['sandbox.reset'] = {
      permission: 'sandbox.manage',
      maxItems: 1,
      internal: true,
      apply: (tx, accountId, _payload, ctx) => reset(tx, accountId, ctx.operationId),
    };
  }
  if (deps.loadScenario) {
    const load = deps.loadScenario;
    types['sandbox.scenario'] = {
      permission: 'sandbox.manage',
      // The reset and the scenario's parts (school_1000 has 1,001).
      maxItems: 1100,
      internal: true,
      apply: (tx, accountId, payload, ctx) => load(tx, accountId, payload, ctx.operationId),
    };
  }
  if (deps.replayDelivery) {
    const replay = deps.replayDelivery;
    types['webhook.replay'] = {
      permission: 'webhooks.manage',
      maxItems: 1000,
      internal: true,
      async apply(tx, accountId, payload) {
        const { eventId } = await replay(tx, accountId, fromId(payload.delivery_id));
        return { event_id: toId(eventId), delivery_id: payload.delivery_id };
      },
    };
  }
  return types;
}
