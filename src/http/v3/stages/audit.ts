// Stage "audit": every v3 call leaves an entry (client-chosen text cut to its column in the
// repository). If the entry cannot be written, the answer becomes 503 audit_unavailable: the call
// is not confirmed, and a retry with the same Idempotency-Key gets the recorded result, or runs
// anew where nothing committed. On PostgreSQL a keyed call that runs in a transaction sends its
// entry with that transaction's COMMIT (withCommit): the entry commits with the change it records
// or neither does, and this stage has nothing left to write.
import type { Context } from 'koa';
import type { Clock } from '../../../clock.ts';
import type { Tx } from '../../../db/engine.ts';
import { AppError } from '../../../errors.ts';
import type { Locale } from '../../../i18n/messages.ts';
import type { AuditEntry, AuditService } from '../../../domain/audit/repo.ts';
import type { AuthContext } from '../../../domain/credentials/auth.ts';
import type { Operation } from '../catalog.ts';
import { renderError } from '../render.ts';
import { V3_BASE } from '../router.ts';

export interface Trace {
  op?: Operation;
  auth?: AuthContext;
  /** The entry committed with the request's transaction (PostgreSQL): nothing left to write. */
  committed?: boolean;
}

/** The request's entry, sent with its transaction's COMMIT where the engine can (idempotent stage). */
export interface CommitAudit {
  /** Adds the entry, with the answer's status, to `tx`'s COMMIT; false where it cannot. */
  add(tx: Tx, status: number): Promise<boolean>;
  /** That COMMIT went through. */
  committed(): void;
}

export function auditStage(
  audit: AuditService,
  clock: Clock,
  onError: (err: unknown, ctx: Context) => void,
) {
  const entry = (ctx: Context, trace: Trace, started: number, status: number): AuditEntry => ({
    requestId: ctx.state.requestId,
    accountId: trace.auth?.account.id ?? null,
    credentialId: trace.auth?.credential.id ?? null,
    adminId: trace.auth?.human?.adminId ?? null,
    method: ctx.method,
    route: trace.op?.path ?? null,
    operationId: trace.op?.id ?? null,
    path: ctx.path,
    status,
    durationMs: Math.round(performance.now() - started),
    ip: ctx.ip || null,
    createdAt: clock.now().toISOString(),
  });

  return {
    async record(ctx: Context, trace: Trace, started: number, locale: Locale): Promise<void> {
      ctx.state.route = trace.op ? V3_BASE + trace.op.path : undefined;
      ctx.state.operationId = trace.op?.id;
      if (trace.committed) return;
      try {
        await audit.record(entry(ctx, trace, started, ctx.status));
      } catch (err) {
        onError(err, ctx);
        // A stream that already ended was answered; its entry is only logged as missing.
        if (!ctx.state.clientClosed && !ctx.headerSent)
          renderError(ctx, new AppError('audit_unavailable'), locale);
      }
    },

    withCommit(ctx: Context, trace: Trace, started: number): CommitAudit {
      return {
        add: (tx, status) =>
          audit.withCommit({ tx }, entry(ctx, trace, started, status), (err) => {
            onError(err, ctx);
            return new AppError('audit_unavailable');
          }),
        committed: () => {
          trace.committed = true;
        },
      };
    },
  };
}
