// The two legacy envelopes, errors and successes, one renderer per generation (spec/DECISIONS.md).
// Legacy clients read the HTTP status twice (header and `code`), so both always agree.
import type { Context } from 'koa';
import { AppError, isAppError, type ErrorCode } from '../../errors.ts';
import { errorMessage, negotiateLocale, type Locale } from '../../i18n/messages.ts';
import { isConnectionLoss } from '../../db/pg-errors.ts';

export type Generation = 'v1' | 'v2';

/** Any thrown value as an AppError; Koa's HttpErrors (ctx.throw) keep their status. */
export function toLegacyError(err: unknown): AppError {
  if (isAppError(err)) return err;
  const status = (err as { status?: unknown })?.status;
  if ((err as { expose?: unknown })?.expose && typeof status === 'number' && status < 500)
    return new AppError('http_error', { status });
  return new AppError(isConnectionLoss(err) ? 'database_unavailable' : 'internal_error');
}

/** Codes the legacy generations answer with another status than v3 does. */
const LEGACY_STATUS: Partial<Record<ErrorCode, number>> = {
  // A body that cannot be read is a bad body: 422, as every other legacy input problem.
  malformed_json: 422,
  json_too_deep: 422,
  invalid_utf8: 422,
  // A business rule is 409 on the legacy generations (v3 keeps 422 for rules without a code).
  domain_rule_violation: 409,
  invalid_transition: 409,
};

export const legacyStatus = (err: AppError): number => LEGACY_STATUS[err.code] ?? err.status;

/** The message, then what the details say (the legacy envelopes have no room for them). */
function legacyMessage(err: AppError, locale: Locale): string {
  const message = errorMessage(err.code, locale, err.params);
  if (!err.details.length) return message;
  const said = err.details.slice(0, 5).map((d) => {
    const at = d.field ?? d.parameter;
    return at && !d.message.startsWith(at) ? `${at}: ${d.message}` : d.message;
  });
  return `${message} ${said.join(' ')}`;
}

export function renderLegacyError(ctx: Context, generation: Generation, err: AppError): void {
  // Messages follow Accept-Language like v3; the code table is shared with every generation.
  const message = legacyMessage(err, negotiateLocale(ctx.get('accept-language')));
  const status = legacyStatus(err);
  ctx.status = status;
  for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
  ctx.body =
    generation === 'v1'
      ? { success: false, code: status, msg: message }
      : { code: status, message, profiler: [], success: false, version: 2, data: null };
}

/** v1 success: `code` (200), `success` (true), `data`. */
export function v1Ok(ctx: Context, data: unknown): void {
  ctx.status = 200;
  ctx.body = { code: 200, success: true, data };
}

/** v2 success: `code, message, profiler, success, version (2), data`. */
export function v2Ok(ctx: Context, data: unknown): void {
  ctx.status = 200;
  ctx.body = { code: 200, message: 'OK', profiler: [], success: true, version: 2, data };
}
