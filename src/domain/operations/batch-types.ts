// What a batch type is to the operation runner: the permission it needs besides
// operations.manage, how many items it takes, and what one item does. An item's effect runs in the
// transaction that records its status, so it is applied exactly once. The types themselves are
// adapters, one file each under src/batches/ (as job types are under src/tasks/).
import type { Tx } from '../../db/engine.ts';

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
   * Optional, PostgreSQL only (unless setBasedOnSqlite): applies a whole chunk with set-based SQL (one lookup, one multi-row
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
  /**
   * applyMany on SQLite too: for a type whose items read and write the same few rows of other
   * tables (an import's rows, deliveries and "applied" marks), a chunk saves statements that knex
   * compiles and SQLite prepares anew on every call, which cost more there than the writes.
   */
  setBasedOnSqlite?: boolean;
  /**
   * Items per set-based chunk on PostgreSQL (default 100): a type whose chunk costs a fixed
   * number of round trips whatever its length (grants, an import's rows) spreads them over more
   * items. SQLite keeps 100: there a chunk holds the one write lock while it runs.
   */
  setChunk?: number;
  /** Records, in the transaction that fails the item, what the failure means to its owner. */
  failed?(tx: Tx, accountId: number, payload: any, err: unknown): Promise<void>;
}

export type BatchTypes = Record<string, BatchType>;
