// The two legacy error envelopes, one renderer per generation (spec/DECISIONS.md). Legacy clients
// read the HTTP status twice (header and `code`), so both always agree.
import type { Context } from 'koa';
import { AppError, isAppError } from '../../errors.ts';
import { errorMessage, negotiateLocale } from '../../i18n/messages.ts';

export type Generation = 'v1' | 'v2';

/** Any thrown value as an AppError; Koa's HttpErrors (ctx.throw) keep their status. */
export function toLegacyError(err: unknown): AppError {
  if (isAppError(err)) return err;
  const status = (err as { status?: unknown })?.status;
  if ((err as { expose?: unknown })?.expose && typeof status === 'number' && status < 500)
    return new AppError('http_error', { status });
  return new AppError('internal_error');
}

export function renderLegacyError(ctx: Context, generation: Generation, err: AppError): void {
  // Messages follow Accept-Language like v3; the code table is shared with every generation.
  const message = errorMessage(err.code, negotiateLocale(ctx.get('accept-language')), err.params);
  ctx.status = err.status;
  for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
  ctx.body =
    generation === 'v1'
      ? { success: false, code: err.status, msg: message }
      : { code: err.status, message, profiler: [], success: false, version: 2, data: null };
}
