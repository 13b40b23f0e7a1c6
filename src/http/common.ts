// Middleware shared by every generation: request id, release header, one log line per request.
// Every line logged about a request goes through its child logger (`ctx.state.log`, see
// requestLog), which carries the request id.
import type { Context, Middleware } from 'koa';
import type { Logger } from '../log.ts';
import { newRequestId } from '../domain/shared/ids.ts';

/** The request's logger (its lines carry request_id), or `fallback` outside a request. */
export function requestLog(ctx: Context | undefined, fallback: Logger): Logger {
  return (ctx?.state.log as Logger | undefined) ?? fallback;
}

/** Health probes arrive every few seconds from every balancer: a passing one is a debug line. */
const PROBES = new Set(['/healthz', '/readyz']);

export function common(release: string, logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = newRequestId();
    // Built on first use: a pino child with redaction costs a few microseconds, which a request
    // logged at no enabled level (LOG_LEVEL=silent, or a debug probe line) need not pay.
    let log: Logger | undefined;
    ctx.state.requestId = requestId;
    Object.defineProperty(ctx.state, 'log', {
      get: () => (log ??= logger.child({ request_id: requestId })),
      enumerable: true,
      configurable: true,
    });
    ctx.set('X-Request-Id', requestId);
    ctx.set('X-Service-Release', release);
    try {
      await next();
    } finally {
      const level = PROBES.has(ctx.path) && ctx.status < 400 ? 'debug' : 'info';
      // Through the parent when nothing built the child: the same line, without the child's cost.
      (log ?? logger)[level](
        {
          ...(log ? {} : { request_id: requestId }),
          method: ctx.method,
          route: ctx.state.route ?? ctx.path,
          status: ctx.status,
          ...(ctx.state.clientClosed ? { client_closed: true } : {}),
          // The caller's own id (v3 operations that declare X-Client-Request-Id), beside ours.
          ...(ctx.state.clientRequestId ? { client_request_id: ctx.state.clientRequestId } : {}),
          duration_ms: Math.round((performance.now() - started) * 10) / 10,
        },
        'request',
      );
    }
  };
}
