// Maps Ajv errors onto the specification's codes: unknown_field / unknown_parameter for names the
// schema does not know, validation_failed for everything else, each with itemized details.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { AppError, type ErrorDetail } from '../../errors.ts';
import { detailMessage, type Locale } from '../../i18n/messages.ts';

type Where = 'field' | 'parameter';

function detailFor(e: ErrorObject, where: Where, locale: Locale): ErrorDetail | null {
  const base = e.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  const join = (name: string) => (base ? `${base}.${name}` : name);
  const p = e.params as Record<string, any>;
  let name = base;
  let code: string;
  const params: Record<string, string | number> = {};
  switch (e.keyword) {
    case 'additionalProperties':
      name = join(p.additionalProperty);
      code = where === 'field' ? 'unknown_field' : 'unknown_parameter';
      break;
    case 'required':
      name = join(p.missingProperty);
      code = 'required';
      break;
    case 'type':
      code = 'invalid_type';
      params.type = String(p.type);
      break;
    case 'format':
      code = p.format === 'email' ? 'invalid_email' : 'invalid_format';
      params.format = String(p.format);
      break;
    case 'pattern':
      code = 'invalid_format';
      params.format = String(p.pattern);
      break;
    case 'enum':
      code = 'invalid_value';
      params.values = (p.allowedValues as unknown[]).join(', ');
      break;
    case 'const':
      code = 'invalid_value';
      params.values = String(p.allowedValue);
      break;
    case 'minLength':
      code = 'too_short';
      params.limit = p.limit;
      break;
    case 'maxLength':
      code = 'too_long';
      params.limit = p.limit;
      break;
    case 'minimum':
    case 'exclusiveMinimum':
      code = 'too_small';
      params.limit = p.limit;
      break;
    case 'maximum':
    case 'exclusiveMaximum':
      code = 'too_large';
      params.limit = p.limit;
      break;
    case 'minItems':
      code = 'too_few_items';
      params.limit = p.limit;
      break;
    case 'maxItems':
      code = 'too_many_items';
      params.limit = p.limit;
      break;
    case 'minProperties':
      code = 'required';
      break;
    case 'oneOf':
    case 'anyOf':
    case 'allOf':
    case 'if':
      return null; // the branch errors say more
    default:
      code = 'invalid';
  }
  params.field = name;
  const detail: ErrorDetail = { code, message: detailMessage(code, locale, params) };
  if (where === 'field') detail.field = name;
  else detail.parameter = name;
  return detail;
}

/**
 * At most this many details in one error: a body of 80,000 unknown keys answered a 6.7 MB 422 and
 * held the event loop for 130-250 ms while every error was localized and rendered.
 */
export const MAX_DETAILS = 100;

/** The details of a failed validation, at most MAX_DETAILS; `prefix` places them in a larger body. */
export function detailsOf(
  validate: ValidateFunction,
  where: Where,
  locale: Locale,
  prefix = '',
): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const e of validate.errors ?? []) {
    if (details.length === MAX_DETAILS) break;
    const d = detailFor(e, where, locale);
    if (!d) continue;
    if (prefix && d.field !== undefined) d.field = d.field ? `${prefix}.${d.field}` : prefix;
    const key = `${d.field ?? d.parameter}|${d.code}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push(d);
  }
  return details;
}

export function check(
  validate: ValidateFunction,
  value: unknown,
  where: Where,
  locale: Locale,
): void {
  if (validate(value)) return;
  const details = detailsOf(validate, where, locale);
  const unknown = details.some((d) => d.code === 'unknown_field' || d.code === 'unknown_parameter');
  if (unknown)
    throw new AppError(where === 'field' ? 'unknown_field' : 'unknown_parameter', { details });
  throw new AppError('validation_failed', { details });
}

/**
 * An operation without a body accepts none, or `{}`: anything else is 422 `unknown_field`, each
 * key a detail (at most MAX_DETAILS, like every other list of details), or one detail for a body
 * that is not an object (`[]`, `5`, `"x"`, `null`). Shared by the server and the mock.
 */
export function refuseBody(body: unknown): void {
  if (body === undefined) return;
  const keys = body && typeof body === 'object' && !Array.isArray(body) ? Object.keys(body) : [''];
  if (keys.length === 0) return;
  throw new AppError('unknown_field', {
    details: keys.slice(0, MAX_DETAILS).map((k) => ({
      field: k,
      code: 'unknown_field',
      message: 'This operation takes no body.',
    })),
  });
}

export const hasNul = (s: unknown): boolean => typeof s === 'string' && s.includes('\0');

/** Paths (`a.b.0`) of the strings, keys included, that hold U+0000; stops at MAX_DETAILS. */
function nulPaths(value: unknown, path: string, out: string[]): void {
  if (out.length >= MAX_DETAILS) return;
  if (hasNul(value)) out.push(path);
  else if (Array.isArray(value))
    value.forEach((v, i) => nulPaths(v, path ? `${path}.${i}` : `${i}`, out));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const at = path ? `${path}.${k}` : k;
      if (hasNul(k)) out.push(at);
      else nulPaths(v, at, out);
    }
  }
}

/**
 * No stored text may hold U+0000: PostgreSQL's text types cannot (500 on that engine), and SQLite
 * would keep what PostgreSQL refuses. The same 422 on both engines, before anything runs.
 */
export function rejectNul(value: unknown, where: Where, locale: Locale): void {
  const paths: string[] = [];
  nulPaths(value, '', paths);
  if (!paths.length) return;
  throw new AppError('validation_failed', {
    details: paths.map((name) => ({
      [where]: name,
      code: 'invalid_characters',
      message: detailMessage('invalid_characters', locale, { field: name }),
    })),
  });
}
