// The permissions a credential can hold are the contract's closed list (every operation's
// x-permissions and x-permissions-conditional, generated from spec/openapi.yaml) plus `*`. A name
// outside it was accepted before and only failed later as permission_denied on some call.
import { permissions as known } from '../../../generated/operations.ts';
import { AppError, type ErrorDetail } from '../../errors.ts';
import { nearest } from '../shared/nearest.ts';

const KNOWN = new Set(known);

/** Why `name` is not a permission, with the nearest one when it looks like a typo; else undefined. */
export function unknownPermission(name: string): string | undefined {
  if (name === '*' || KNOWN.has(name)) return undefined;
  const near = nearest(name, KNOWN);
  return `Not a permission of the contract: ${name}.${near ? ` Did you mean ${near}?` : ''}`;
}

/** 422 validation_failed with one detail per unknown name (`permissions.<index>`). */
export function assertKnownPermissions(names: readonly string[]): void {
  const details: ErrorDetail[] = [];
  names.forEach((name, i) => {
    const message = unknownPermission(name);
    if (message) details.push({ field: `permissions.${i}`, code: 'invalid_value', message });
  });
  if (details.length) throw new AppError('validation_failed', { details });
}
