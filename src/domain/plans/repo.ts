// Plans (table `plans`, changes as JSON) and the keys plans remembered (table `plan_keys`).
import type { Tx } from '../../db/knex.ts';
import { bool, insertId, json } from '../../db/dialect.ts';
import { keyset, pages } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Change, Plan, PlanType } from './types.ts';

const map = (r: any): Plan => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  prune: bool(r.prune),
  changes: json<Change[]>(r.changes, []),
  operationId: r.operation_id === null ? null : Number(r.operation_id),
  operationStatus: r.operation_status ?? null,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

const newest = keyset('plans.created_at', 'plans.id');
const planPages = pages({ list: 'plans', sorts: { '-created_at': newest.desc }, map });

/** The plan with its operation's status (null before it is applied). */
const withStatus = ({ tx }: { tx: Tx }) =>
  tx('plans')
    .leftJoin('operations', 'operations.id', 'plans.operation_id')
    .select('plans.*', 'operations.status as operation_status');

export const plansRepo = {
  async insert(
    { tx }: { tx: Tx },
    p: {
      accountId: number;
      credentialId: number;
      prune: boolean;
      changes: Change[];
      createdAt: string;
      expiresAt: string;
    },
  ): Promise<number> {
    return insertId({ tx }, 'plans', {
      account_id: p.accountId,
      credential_id: p.credentialId,
      prune: p.prune,
      changes: JSON.stringify(p.changes),
      operation_id: null,
      created_at: p.createdAt,
      expires_at: p.expiresAt,
    });
  },

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Plan | null> {
    const r = await withStatus({ tx })
      .where({ 'plans.account_id': accountId, 'plans.id': id })
      .first();
    return r ? map(r) : null;
  },

  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    q: { limit?: number; cursor?: string },
  ) {
    const query = withStatus({ tx }).where('plans.account_id', accountId);
    return planPages(query, cursors, { of: [accountId], filters: {}, ...q });
  },

  /** Records the plan's operation, only once: returns 0 when another application won. */
  setOperation({ tx }: { tx: Tx }, id: number, operationId: number): Promise<number> {
    return tx('plans').where('id', id).whereNull('operation_id').update({
      operation_id: operationId,
    });
  },

  /** Deletes plans created before `cutoff`, but not one whose operation is still at work. */
  async purgeBefore({ tx }: { tx: Tx }, cutoff: string): Promise<number> {
    return tx('plans')
      .where('created_at', '<', cutoff)
      .where((q) =>
        q
          .whereNull('operation_id')
          .orWhereNotExists(
            tx('operations')
              .select(tx.raw('1'))
              .whereRaw('operations.id = plans.operation_id')
              .whereIn('operations.status', ['queued', 'running']),
          ),
      )
      .delete();
  },

  /** Every key the account's plans remembered: `type.key` -> resource id. */
  async keys({ tx }: { tx: Tx }, accountId: number): Promise<Map<string, number>> {
    const rows = await tx('plan_keys').where('account_id', accountId).select();
    return new Map(rows.map((r: any) => [`${r.type}.${r.key}`, Number(r.resource_id)]));
  },

  async key(
    { tx }: { tx: Tx },
    accountId: number,
    type: PlanType,
    key: string,
  ): Promise<number | null> {
    const r = await tx('plan_keys').where({ account_id: accountId, type, key }).first();
    return r ? Number(r.resource_id) : null;
  },

  /** `key` now names `resourceId` (and no other key of that type names it any longer). */
  async bind(
    { tx }: { tx: Tx },
    accountId: number,
    type: PlanType,
    key: string,
    resourceId: number,
  ) {
    await tx('plan_keys')
      .where({ account_id: accountId, type, resource_id: resourceId })
      .whereNot('key', key)
      .delete();
    await tx('plan_keys')
      .insert({ account_id: accountId, type, key, resource_id: resourceId })
      .onConflict(['account_id', 'type', 'key'])
      .merge(['resource_id']);
  },

  async unbind({ tx }: { tx: Tx }, accountId: number, type: PlanType, resourceId: number) {
    await tx('plan_keys').where({ account_id: accountId, type, resource_id: resourceId }).delete();
  },
};
