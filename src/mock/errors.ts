// openapi-backend's request validation errors, answered as the real server answers them: a path
// parameter that cannot name a resource is 404 not_found; query parameters are 400
// unknown_parameter or 422 validation_failed; a missing or malformed Idempotency-Key is 422
// idempotency_key_required / idempotency_key_invalid; the body is 422 unknown_field or
// validation_failed. The first failing place wins, in the real pipeline's order.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { AppError } from '../errors.ts';
import type { Locale } from '../i18n/messages.ts';
import { detailsOf } from '../http/v3/validation.ts';

type Place = 'path' | 'query' | 'header' | 'requestBody';
const ORDER: Place[] = ['path', 'query', 'header', 'requestBody'];

/** Which part of the request an error is about, and the error relative to that part. */
function placeOf(e: ErrorObject): { place: Place; error: ErrorObject } | null {
  const m = /^\/(path|query|header|requestBody)(\/.*)?$/.exec(e.instancePath);
  if (m) return { place: m[1] as Place, error: { ...e, instancePath: m[2] ?? '' } };
  // "required" at the root: a whole part is missing (a required header, or the body).
  const missing = (e.params as { missingProperty?: string }).missingProperty;
  if (e.instancePath === '' && ORDER.includes(missing as Place)) {
    return { place: missing as Place, error: { ...e, params: { missingProperty: '' } } };
  }
  return null;
}

const asValidate = (errors: ErrorObject[]) => ({ errors }) as unknown as ValidateFunction;

export function validationError(errors: ErrorObject[], locale: Locale): AppError {
  const placed = errors.map(placeOf).filter((p) => p !== null);
  const place = ORDER.find((p) => placed.some((e) => e.place === p));
  const own = placed.filter((e) => e.place === place).map((e) => e.error);
  switch (place) {
    case 'path':
      return new AppError('not_found');
    case 'header': {
      const names = own.map((e) =>
        e.keyword === 'required'
          ? (e.params as { missingProperty: string }).missingProperty
          : e.instancePath.slice(1),
      );
      if (names.includes('idempotency-key')) {
        const missing = own.some((e) => e.keyword === 'required');
        return new AppError(missing ? 'idempotency_key_required' : 'idempotency_key_invalid');
      }
      const details = detailsOf(asValidate(own), 'parameter', locale);
      return new AppError('validation_failed', { details });
    }
    case 'query':
    case 'requestBody': {
      const where = place === 'query' ? 'parameter' : 'field';
      const details = detailsOf(asValidate(own), where, locale);
      const unknown = details.some(
        (d) => d.code === 'unknown_field' || d.code === 'unknown_parameter',
      );
      if (unknown)
        return new AppError(where === 'field' ? 'unknown_field' : 'unknown_parameter', { details });
      return new AppError('validation_failed', { details });
    }
    default:
      return new AppError('validation_failed');
  }
}
