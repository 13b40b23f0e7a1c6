// v3 operations: batches, their items and attempts, cancellation and resumption.
import type { components } from '../../../../generated/types.ts';
import type { OperationsService } from '../../../domain/operations/service.ts';
import type { Attempt, Item, Operation } from '../../../domain/operations/repo.ts';
import { fromId, toId } from '../../../domain/shared/ids.ts';
import type { PayloadChecks } from '../payloads.ts';
import type { Handlers } from './types.ts';

type S = components['schemas'];

export type OperationOps =
  | 'createBatchOperation'
  | 'getOperation'
  | 'updateOperation'
  | 'listOperationItems'
  | 'listOperationAttempts'
  | 'resumeOperation';

export const operationPath = (id: number) => `/api/v3/operations/${id}`;

export function presentOperation(op: Operation): S['Operation'] {
  return {
    object: 'operation',
    id: toId(op.id)!,
    type: op.type,
    status: op.status,
    progress: { total: op.total, done: op.done, failed: op.failed },
    attempt: { number: op.attemptNumber, status: op.attemptStatus as S['OperationStatus'] },
    cancellation_requested: op.cancellationRequested,
    items_url: `${operationPath(op.id)}/items`,
    result_url: null,
    error: op.error,
    created_at: op.createdAt,
    started_at: op.startedAt,
    finished_at: op.finishedAt,
    expires_at: op.expiresAt,
  };
}

const presentItem = (i: Item): S['OperationItem'] => ({
  object: 'operation_item',
  key: i.key,
  index: i.position,
  status: i.status,
  error: i.error,
  retryable: i.retryable,
  result: (i.result as Record<string, unknown> | null) ?? null,
  attempt: i.attemptNumber,
  updated_at: i.updatedAt,
});

const presentAttempt = (a: Attempt): S['OperationAttempt'] => ({
  object: 'operation_attempt',
  number: a.number,
  origin: a.origin,
  status: a.status as S['OperationStatus'],
  created_at: a.createdAt,
  started_at: a.startedAt,
  finished_at: a.finishedAt,
});

/** 202 with the operation and where to poll it. */
export const accepted = (op: Operation) => ({
  status: 202 as const,
  body: { data: presentOperation(op) },
  headers: { Location: operationPath(op.id) },
});

export function operationHandlers(
  s: OperationsService,
  checks: PayloadChecks,
): Pick<Handlers, OperationOps> {
  return {
    async createBatchOperation({ auth, body, tx, locale }) {
      return accepted(await s.createBatch(auth, body, { tx, check: checks(locale) }));
    },
    async getOperation({ auth, params }) {
      const op = await s.get(auth.account.id, fromId(params.operation_id));
      return { status: 200, body: { data: presentOperation(op) } };
    },
    async updateOperation({ auth, params, tx }) {
      const op = await s.cancel(auth.account.id, fromId(params.operation_id), { tx });
      return { status: 200, body: { data: presentOperation(op) } };
    },
    async listOperationItems({ auth, params, query }) {
      const page = await s.items(auth.account.id, fromId(params.operation_id), query);
      return { status: 200, body: { data: page.rows.map(presentItem), page: page.page } };
    },
    async listOperationAttempts({ auth, params }) {
      const attempts = await s.attempts(auth.account.id, fromId(params.operation_id));
      return { status: 200, body: { data: attempts.map(presentAttempt) } };
    },
    async resumeOperation({ auth, params, tx }) {
      return accepted(await s.resume(auth.account.id, fromId(params.operation_id), { tx }));
    },
  };
}
