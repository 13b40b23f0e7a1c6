// Error answers asked for with `Prefer: code=NNN`. Every error response of the contract shares one
// schema whose example says `validation_failed`, so a 404 served from it would say a 422's code:
// the example is kept only when its code belongs to the status (the error catalog,
// ERROR_STATUS), else the envelope is built for a code that does, in the caller's language.
import { AppError, ERROR_STATUS, type ErrorCode } from '../errors.ts';

type Obj = Record<string, any>;

/** The code a status most often means; the contract's own words come first (codeFor). */
const USUAL: Partial<Record<number, ErrorCode>> = {
  401: 'unauthenticated',
  403: 'permission_denied',
  404: 'not_found',
  409: 'state_conflict',
  422: 'validation_failed',
  429: 'rate_limit_exceeded',
  500: 'internal_error',
};

const isCode = (c: string): c is ErrorCode => Object.hasOwn(ERROR_STATUS, c);
/** Error codes quoted (`like_this`) in a description, that this status answers. */
function named(text: unknown, status: number): ErrorCode[] {
  const quoted = [...String(text ?? '').matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
  return quoted.filter((c) => isCode(c) && ERROR_STATUS[c] === status) as ErrorCode[];
}

/**
 * The code for `status` on this operation: one its description names for that status (409
 * `already_exists` on createUser), else the usual one, else one the response's description names
 * (410 `cursor_expired`), else the catalog's first with that status, else `http_error`.
 */
export function codeFor(op: Obj, response: Obj | undefined, status: number): ErrorCode {
  const byStatus = (Object.keys(ERROR_STATUS) as ErrorCode[]).find(
    (c) => ERROR_STATUS[c] === status,
  );
  return (
    named(op.description, status)[0] ??
    USUAL[status] ??
    named(response?.description, status)[0] ??
    byStatus ??
    'http_error'
  );
}

/** The example a response declares: a named one, the media type's, else its schema's first. */
function exampleOf(response: Obj | undefined, name: string | undefined): unknown {
  const media = response?.content?.['application/json'];
  if (!media) return undefined;
  if (name && media.examples?.[name]) return media.examples[name].value;
  if (media.example !== undefined) return media.example;
  const named = Object.values<Obj>(media.examples ?? {})[0];
  if (named) return named.value;
  return media.schema?.examples?.[0] ?? media.schema?.example;
}

/** The answer to `Prefer: code=<status>` (a declared error status) on this operation. */
export function errorAnswer(
  op: Obj,
  status: number,
  example: string | undefined,
): { example: unknown } | { error: AppError } {
  const response = op.responses?.[String(status)] ?? op.responses?.default;
  const value = exampleOf(response, example) as Obj | undefined;
  const code = value?.error?.code;
  if (typeof code === 'string' && isCode(code) && ERROR_STATUS[code] === status)
    return { example: value };
  const chosen = codeFor(op, response, status);
  // 429 promises Retry-After (header and body), as the real server sends them.
  const wait =
    status === 429 ? { headers: { 'Retry-After': '1' }, extra: { retry_after_seconds: 1 } } : {};
  return { error: new AppError(chosen, { status, ...wait }) };
}
