// Reading the transactions gateways posted back: the v3 list and item, and the v2 lookup by a
// sale's or subscription's id at a gateway.
import type { Db, Tx } from '../../db/knex.ts';
import type { PageResult } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { AppError } from '../../errors.ts';
import { instantParam } from '../events/service.ts';
import { fromId, toId } from '../shared/ids.ts';
import {
  transactionsRepo as repo,
  type ProcessingStatus,
  type SaleTransaction,
} from './transactions-repo.ts';

export interface TransactionListQuery {
  sort?: 'created_at' | '-created_at';
  delivery_id?: string;
  engine?: string;
  transaction_id?: string;
  recurrence_id?: string;
  status?: ProcessingStatus;
  email?: string;
  created_after?: string;
  created_before?: string;
  limit?: number;
  cursor?: string;
}

/** The public shape: the v3 resource and the data of `transaction.recorded`. */
export function transactionResource(t: SaleTransaction) {
  return {
    object: 'transaction' as const,
    id: String(t.id),
    delivery_id: String(t.deliveryId),
    user_id: toId(t.userId),
    engine: t.engine,
    transaction_id: t.transactionId,
    recurrence_id: t.recurrenceId,
    event: t.event,
    product_ids: t.productIds,
    client_name: t.clientName,
    client_email: t.clientEmail,
    client_doc: t.clientDoc,
    client_phone: t.clientPhone,
    status: t.status,
    transaction_status: t.transactionStatus,
    recurrence_status: t.recurrenceStatus,
    error: t.error,
    created_at: t.createdAt,
  };
}

/** The transaction as `transaction.recorded` carries it (spec/events/transaction.recorded). */
export function transactionSnapshot(t: SaleTransaction) {
  const { object: _object, ...rest } = transactionResource(t);
  return rest;
}

export class TransactionsService {
  private readonly db: Db;
  private readonly cursors: CursorCodec;
  constructor(db: Db, cursors: CursorCodec) {
    this.db = db;
    this.cursors = cursors;
  }

  async get(
    accountId: number,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<SaleTransaction> {
    const t = id === null ? null : await repo.get({ tx }, accountId, id);
    if (!t) throw new AppError('not_found');
    return t;
  }

  async list(
    accountId: number,
    q: TransactionListQuery,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<PageResult<SaleTransaction>> {
    const filters = {
      // Not parseable as an id: a filter that matches nothing (null), not an error.
      deliveryId: q.delivery_id === undefined ? undefined : fromId(q.delivery_id),
      engine: q.engine,
      transactionId: q.transaction_id,
      recurrenceId: q.recurrence_id,
      status: q.status,
      emailLower: q.email?.toLowerCase(),
      createdAfter: instantParam('created_after', q.created_after),
      createdBefore: instantParam('created_before', q.created_before),
    };
    return repo.page({ tx }, this.cursors, accountId, filters, q);
  }

  /** Transactions whose sale or subscription id at the gateway is `externalId`, oldest first. */
  async listByExternal(
    accountId: number,
    engine: string,
    externalId: string,
    { tx = this.db }: { tx?: Tx } = {},
  ) {
    return repo.byExternal({ tx }, accountId, engine, externalId);
  }
}
