// Gateway postbacks, outside /api/v3 and its contract: POST /postbacks/{delivery_id}/{token}. The
// token (ids are sequential) and then the delivery's secret (header X-Postback-Secret)
// authenticate the call before its body is read: a wrong token is 404 like an unknown id, a wrong
// or missing secret 401, and nothing is recorded. The body gets the v3 text rules (U+0000 is 422).
// Answers 200 with a small JSON, errors in the v3 envelope (gateways only look at the status:
// anything but 2xx is retried later).
import type { Context, Middleware } from 'koa';
import { AppError } from '../errors.ts';
import { negotiateLocale } from '../i18n/messages.ts';
import type { RateLimits } from '../domain/ratelimit.ts';
import type { PostbacksService } from '../domain/sales/postbacks.ts';
import { closedByClient, isJsonRequest, parseJson, readBody } from './body.ts';
import { renderError, toAppError } from './v3/render.ts';
import { rejectNul } from './v3/validation.ts';

const PATH = /^\/postbacks\/([^/]+)(?:\/([^/]+))?$/;

export interface PostbackDeps {
  postbacks: PostbacksService;
  rateLimits: RateLimits;
  onError: (err: unknown, ctx: Context) => void;
}

export function postbackRoutes(deps: PostbackDeps): Middleware {
  async function handle(ctx: Context, deliveryId: string, token: string | undefined) {
    if (ctx.method !== 'POST')
      throw new AppError('method_not_allowed', { headers: { Allow: 'POST' } });
    await deps.rateLimits.consume('source', ctx.ip || 'unknown');
    const delivery = await deps.postbacks.authenticate(
      deliveryId,
      token,
      ctx.get('x-postback-secret') || undefined,
    );
    if (!isJsonRequest(ctx.req)) throw new AppError('unsupported_media_type');
    const body = parseJson(await readBody(ctx.req));
    rejectNul(body, 'field', negotiateLocale(ctx.get('accept-language')));
    const outcome = await deps.postbacks.receive(delivery, body);
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body =
      outcome.kind === 'ignored'
        ? { received: true, ignored: outcome.reason }
        : {
            received: true,
            duplicate: outcome.duplicate,
            transaction: {
              id: String(outcome.transaction.id),
              status: outcome.transaction.status,
              error: outcome.transaction.error,
            },
          };
  }

  return async function postbacks(ctx, next) {
    const m = PATH.exec(ctx.path);
    if (!m) return next();
    ctx.state.route =
      m[2] === undefined ? '/postbacks/:delivery_id' : '/postbacks/:delivery_id/:token';
    try {
      await handle(
        ctx,
        decodeURIComponent(m[1]!),
        m[2] === undefined ? undefined : decodeURIComponent(m[2]),
      );
    } catch (err) {
      if (closedByClient(ctx, err)) return;
      const e = err instanceof URIError ? new AppError('not_found') : toAppError(err);
      if (e.code === 'internal_error') deps.onError(err, ctx);
      renderError(ctx, e, negotiateLocale(ctx.get('accept-language')));
    }
  };
}
