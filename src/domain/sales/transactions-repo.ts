// Transactions posted back by gateways (table `sales_transactions`). Every function takes the
// caller's `tx`.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Tx } from '../../db/knex.ts';
import { insertId, json } from '../../db/dialect.ts';
import { toRow } from '../shared/row.ts';
import type { SaleStatus } from './gateways.ts';

export type ProcessingStatus = 'processed' | 'ignored';

export interface SaleTransaction {
  id: number;
  accountId: number;
  deliveryId: number;
  userId: number | null;
  engine: string;
  transactionId: string;
  recurrenceId: string | null;
  /** The gateway's status, normalized. */
  event: SaleStatus;
  productIds: string[];
  clientName: string | null;
  clientEmail: string | null;
  clientDoc: string | null;
  clientPhone: string | null;
  status: ProcessingStatus;
  transactionStatus: string | null;
  recurrenceStatus: string | null;
  error: string | null;
  createdAt: string;
}

/** A transaction as recorded; the repository sets its creation time. */
export type NewTransaction = Omit<SaleTransaction, 'id' | 'createdAt'>;

const map = (r: any): SaleTransaction => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  deliveryId: Number(r.delivery_id),
  userId: r.user_id === null || r.user_id === undefined ? null : Number(r.user_id),
  engine: r.engine,
  transactionId: r.transaction_id,
  recurrenceId: r.recurrence_id ?? null,
  event: r.event,
  productIds: json<string[]>(r.product_ids, []),
  clientName: r.client_name ?? null,
  clientEmail: r.client_email ?? null,
  clientDoc: r.client_doc ?? null,
  clientPhone: r.client_phone ?? null,
  status: r.status,
  transactionStatus: r.transaction_status ?? null,
  recurrenceStatus: r.recurrence_status ?? null,
  error: r.error ?? null,
  createdAt: r.created_at,
});

export interface TransactionFilters {
  deliveryId?: number | null;
  engine?: string;
  transactionId?: string;
  recurrenceId?: string;
  status?: ProcessingStatus;
  emailLower?: string;
  createdAfter?: string;
  createdBefore?: string;
}

const byCreation = keyset('sales_transactions.created_at', 'sales_transactions.id');
const transactionPages = pages({
  list: 'transactions',
  sorts: { '-created_at': byCreation.desc, created_at: byCreation.asc },
  map,
});

export const transactionsRepo = {
  map,

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<SaleTransaction | null> {
    const r = await tx('sales_transactions').where({ account_id: accountId, id }).first();
    return r ? map(r) : null;
  },

  /** The one recorded for this sale and status at this delivery, if any (repeats are no-ops). */
  async find({ tx }: { tx: Tx }, deliveryId: number, transactionId: string, event: string) {
    const r = await tx('sales_transactions')
      .where({ delivery_id: deliveryId, transaction_id: transactionId, event })
      .first();
    return r ? map(r) : null;
  },

  /** One page of the account's sale transactions, newest first by default. */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    f: TransactionFilters,
    p: PageParams,
  ) {
    const query = transactionsRepo.listQuery({ tx }, accountId, f);
    return transactionPages(query, cursors, { ...p, of: [accountId], filters: { ...f } });
  },

  /** Unordered: paginate adds the keyset condition and ORDER BY (created_at, id). */
  listQuery({ tx }: { tx: Tx }, accountId: number, f: TransactionFilters) {
    const q = tx('sales_transactions').where('sales_transactions.account_id', accountId);
    if (f.deliveryId !== undefined) q.where('sales_transactions.delivery_id', f.deliveryId ?? 0);
    if (f.engine !== undefined) q.where('sales_transactions.engine', f.engine);
    if (f.transactionId !== undefined)
      q.where('sales_transactions.transaction_id', f.transactionId);
    if (f.recurrenceId !== undefined) q.where('sales_transactions.recurrence_id', f.recurrenceId);
    if (f.status !== undefined) q.where('sales_transactions.status', f.status);
    if (f.emailLower !== undefined) q.where('sales_transactions.client_email_lower', f.emailLower);
    if (f.createdAfter !== undefined)
      q.where('sales_transactions.created_at', '>=', f.createdAfter);
    if (f.createdBefore !== undefined)
      q.where('sales_transactions.created_at', '<', f.createdBefore);
    return q.select('sales_transactions.*');
  },

  /** A sale's or subscription's transactions at a gateway (v2), oldest first. */
  async byExternal({ tx }: { tx: Tx }, accountId: number, engine: string, externalId: string) {
    const rows = await tx('sales_transactions')
      .where({ account_id: accountId, engine })
      .where((w) => w.where('transaction_id', externalId).orWhere('recurrence_id', externalId))
      .orderBy('id');
    return rows.map(map);
  },

  /** product_ids is JSON text; the email's lower case is kept for the case-blind filter. */
  async insert({ tx }: { tx: Tx }, t: NewTransaction, now: string): Promise<number> {
    return insertId({ tx }, 'sales_transactions', {
      ...toRow(t),
      product_ids: JSON.stringify(t.productIds),
      client_email_lower: t.clientEmail?.toLowerCase() ?? null,
      created_at: now,
    });
  },
};
