// Stage "audit": every v3 call leaves an entry (client-chosen text cut to its column in the
// repository). If the entry cannot be written, the answer becomes 503 audit_unavailable: the call
// is not confirmed, and a retry with the same Idempotency-Key gets the recorded result.
import type { Context } from 'koa';
import type { Clock } from '../../../clock.ts';
import { AppError } from '../../../errors.ts';
import type { Locale } from '../../../i18n/messages.ts';
import type { AuditService } from '../../../domain/audit/repo.ts';
import type { AuthContext } from '../../../domain/credentials/auth.ts';
import type { Operation } from '../catalog.ts';
import { renderError } from '../render.ts';
import { V3_BASE } from '../router.ts';

export interface Trace {
  op?: Operation;
  auth?: AuthContext;
}

export function auditStage(
  audit: AuditService,
  clock: Clock,
  onError: (err: unknown, ctx: Context) => void,
) {
  return async function record(ctx: Context, trace: Trace, started: number, locale: Locale) {
    ctx.state.route = trace.op ? V3_BASE + trace.op.path : undefined;
    ctx.state.operationId = trace.op?.id;
    try {
      await audit.record({
        requestId: ctx.state.requestId,
        accountId: trace.auth?.account.id ?? null,
        credentialId: trace.auth?.credential.id ?? null,
        adminId: trace.auth?.human?.adminId ?? null,
        method: ctx.method,
        route: trace.op?.path ?? null,
        operationId: trace.op?.id ?? null,
        path: ctx.path,
        status: ctx.status,
        durationMs: Math.round(performance.now() - started),
        ip: ctx.ip || null,
        createdAt: clock.now().toISOString(),
      });
    } catch (err) {
      onError(err, ctx);
      // A stream that already ended was answered; its entry is only logged as missing.
      if (!ctx.state.clientClosed && !ctx.headerSent)
        renderError(ctx, new AppError('audit_unavailable'), locale);
    }
  };
}
