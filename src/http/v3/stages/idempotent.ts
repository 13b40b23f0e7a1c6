// Stage "idempotent": wraps the bound handler (execute.ts). Without an Idempotency-Key it just
// runs. With one, the key is reserved first; a repeat replays the recorded answer
// (Idempotent-Replayed: true); otherwise the handler runs in one transaction with the recorded
// result, so the effects and what a retry will be told commit together. A validation error or a
// 5xx frees the key; a business rejection is recorded as the key's answer. On PostgreSQL the key
// is claimed inside that transaction (advisory locks, migration 032) rather than by a lock row
// committed before it, and the request's audit entry goes with its COMMIT.
import type { Context } from 'koa';
import type { Db, Tx } from '../../../db/engine.ts';
import { transaction } from '../../../db/tx.ts';
import { AppError } from '../../../errors.ts';
import type { AuthContext } from '../../../domain/credentials/auth.ts';
import {
  requestHash,
  type IdempotencyService,
  type RecordedResponse,
  type Reservation,
} from '../../../domain/idempotency/service.ts';
import { isUniqueViolation } from '../../../db/dialect.ts';
import type { Operation } from '../catalog.ts';
import { toAppError } from '../render.ts';
import type { CommitAudit } from './audit.ts';
import type { Answer, Execute } from './execute.ts';
import type { Input } from './input.ts';

/** Errors that mean "nothing was done": the Idempotency-Key is not consumed. */
const NOT_CONSUMING = new Set(['validation_failed', 'unknown_field', 'unknown_parameter']);

const text = (body: unknown) => (body === undefined ? undefined : JSON.stringify(body));

/** A business rejection as recorded for the key. */
const rejection = (e: AppError) =>
  JSON.stringify({ error: { code: e.code, details: e.details, ...e.extra } });

/** A recorded answer again (Idempotent-Replayed: true). */
function replayed(reservation: Extract<Reservation, { kind: 'replay' }>): Answer {
  if (reservation.status >= 400) {
    // A recorded rejection is rendered again, localized and with this request's id.
    const { error } = JSON.parse(reservation.body!);
    const { code, details, ...extra } = error;
    throw new AppError(code, {
      status: reservation.status,
      details,
      extra,
      headers: { 'Idempotent-Replayed': 'true' },
    });
  }
  return {
    status: reservation.status,
    body: reservation.body ?? undefined,
    headers: { ...reservation.headers, 'Idempotent-Replayed': 'true' },
  };
}

export function idempotentStage(db: Db, idempotency: IdempotencyService) {
  /**
   * PostgreSQL: the key claimed inside the request's transaction (spec/DECISIONS.md, "The
   * idempotency claim inside the transaction"): one commit per request, none for the lock. Null
   * when the key has a lock row of the committed-row path: reserve() then decides.
   */
  async function claimedInTransaction(
    credentialId: number,
    key: string,
    hash: string,
    execute: Execute,
    audit: CommitAudit | undefined,
  ): Promise<Answer | null> {
    let fromHandler: unknown;
    let audited = false;
    let outcome;
    try {
      outcome = await transaction(db, async (tx) => {
        audited = false; // what this run of the transaction added
        const claim = await idempotency.claim({ tx }, credentialId, key, hash);
        if (claim.kind !== 'execute') return claim;
        const record = (res: RecordedResponse) =>
          idempotency.recordInTransaction({ tx }, credentialId, key, hash, claim.token, res);
        try {
          const result = await execute(tx);
          const body = text(result.body);
          const replayable = result.replayable !== false;
          await record({
            status: result.status,
            headers: result.headers ?? {},
            body: replayable ? (body ?? null) : null,
            replayable,
          });
          audited = (await audit?.add(tx, result.status)) ?? false;
          return { kind: 'done' as const, status: result.status, body, headers: result.headers };
        } catch (err) {
          const e = toAppError(err);
          if (
            NOT_CONSUMING.has(e.code) ||
            e.status >= 500 ||
            e.code === 'operation_ownership_lost'
          ) {
            fromHandler = err; // rolled back: nothing was done, the key is free
            throw err;
          }
          // A business rejection is the request's result: its effects undone, the key still held
          // until the rejection's record commits.
          await idempotency.rejectInTransaction({ tx });
          await record({ status: e.status, headers: {}, body: rejection(e), replayable: true });
          audited = (await audit?.add(tx, e.status)) ?? false;
          return { kind: 'rejected' as const, err };
        }
      });
    } catch (err) {
      // The record's insert met a record written meanwhile by the committed-row path.
      if (err !== fromHandler && isUniqueViolation(err))
        throw new AppError('operation_ownership_lost');
      throw err;
    }
    if (audited) audit!.committed();
    if (outcome.kind === 'fallback') return null;
    if (outcome.kind === 'replay') return replayed(outcome);
    if (outcome.kind === 'rejected') throw outcome.err;
    return { status: outcome.status, body: outcome.body, headers: outcome.headers };
  }

  return async function idempotent(
    ctx: Context,
    op: Operation,
    input: Input,
    auth: AuthContext,
    execute: Execute,
    /** The request's audit entry, to go with the COMMIT of its transaction. */
    audit?: CommitAudit,
  ): Promise<Answer> {
    const { key } = input;
    if (key === undefined) {
      const result = await execute(undefined);
      return {
        status: result.status,
        body: text(result.body),
        headers: result.headers,
        stream: result.stream,
      };
    }

    const credentialId = auth.credential.id;
    const hash = requestHash(ctx.method, ctx.path, input.body);
    if (idempotency.claimsInTransaction && !op.outsideTransaction) {
      const answer = await claimedInTransaction(credentialId, key, hash, execute, audit);
      if (answer) return answer;
    }
    const reservation = await idempotency.reserve(credentialId, key, hash);
    if (reservation.kind === 'replay') return replayed(reservation);
    const { token } = reservation;
    const run = async (tx: Tx | undefined, record: Tx | Db) => {
      const result = await execute(tx);
      const body = text(result.body);
      const replayable = result.replayable !== false;
      await idempotency.complete({ tx: record }, credentialId, key, token, {
        status: result.status,
        headers: result.headers ?? {},
        // A response shown once (a credential's secret) is never stored, not even here.
        body: replayable ? (body ?? null) : null,
        replayable,
      });
      return { status: result.status, body, headers: result.headers };
    };
    try {
      // An operation idempotent by nature may run outside the transaction (see Operation).
      if (op.outsideTransaction) return await run(undefined, db);
      return await transaction(db, (tx) => run(tx, tx));
    } catch (err) {
      const e = toAppError(err);
      if (e.code === 'operation_ownership_lost') {
        // Another attempt owns the key now; it records the result.
      } else if (NOT_CONSUMING.has(e.code) || e.status >= 500) {
        await idempotency.release(credentialId, key, token).catch(() => undefined);
      } else {
        // A business rejection is the request's result: a retry gets the same answer.
        const body = rejection(e);
        await idempotency
          .complete({ tx: db }, credentialId, key, token, {
            status: e.status,
            headers: {},
            body,
            replayable: true,
          })
          .catch(() => undefined);
      }
      throw err;
    } finally {
      idempotency.settle(credentialId, key, token);
    }
  };
}
