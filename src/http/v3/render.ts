// The v3 error envelope, rendered in one place.
import type { Context } from 'koa';
import { AppError, isAppError } from '../../errors.ts';
import { errorMessage, type Locale } from '../../i18n/messages.ts';
import { isConnectionLoss } from '../../db/pg-errors.ts';

/** A database that went away is 503 (retry later), not 500: the request may well pass again. */
export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  return new AppError(isConnectionLoss(err) ? 'database_unavailable' : 'internal_error');
}

/** Headers that describe a successful result; an error that replaces one must not keep them. */
const SUCCESS_HEADERS = ['ETag', 'Location', 'Idempotent-Replayed'];

export function renderError(ctx: Context, err: AppError, locale: Locale): void {
  for (const h of SUCCESS_HEADERS) ctx.remove(h);
  ctx.status = err.status;
  for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
  ctx.type = 'application/json';
  ctx.body = JSON.stringify({
    error: {
      code: err.code,
      message: errorMessage(err.code, locale, err.params),
      request_id: ctx.state.requestId,
      details: err.details,
      ...err.extra,
    },
  });
}

export function renderJson(
  ctx: Context,
  status: number,
  body: unknown,
  headers?: Record<string, string>,
) {
  ctx.status = status;
  if (headers) for (const [k, v] of Object.entries(headers)) ctx.set(k, v);
  if (body === undefined) {
    ctx.body = null;
    return;
  }
  ctx.type = 'application/json';
  ctx.body = typeof body === 'string' ? body : JSON.stringify(body);
}
