// Middleware shared by every generation: request id, release header, one log line per request.
import type { Middleware } from 'koa';
import type { Logger } from '../log.ts';
import { newRequestId } from '../domain/shared/ids.ts';

export function common(release: string, logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = newRequestId();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    ctx.set('X-Service-Release', release);
    try {
      await next();
    } finally {
      logger.info(
        {
          request_id: requestId,
          method: ctx.method,
          route: ctx.state.route ?? ctx.path,
          status: ctx.status,
          ...(ctx.state.clientClosed ? { client_closed: true } : {}),
          duration_ms: Math.round((performance.now() - started) * 10) / 10,
        },
        'request',
      );
    }
  };
}
