// A store that fails or does not answer is 503 storage_unavailable, never a 500: the client may
// retry, and nothing the database committed depends on the failed call. What the store refuses
// because of the client's parts (missing, another ETag, too small) is the client's mismatch.
import { AppError } from '../../../errors.ts';

const CLIENT_PART_ERRORS = new Set(['InvalidPart', 'InvalidPartOrder', 'EntityTooSmall']);

export async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw storageError(err);
  }
}

export function storageError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const name = (err as { name?: string })?.name ?? '';
  if (CLIENT_PART_ERRORS.has(name)) return integrityMismatch('part_not_uploaded', name);
  return new AppError('storage_unavailable', {
    details: [
      { code: 'storage_unavailable', message: 'The file store failed.', reason: reason(err) },
    ],
  });
}

export function integrityMismatch(reason: string, message: string, field?: string): AppError {
  return new AppError('upload_integrity_mismatch', {
    details: [{ code: 'upload_integrity_mismatch', reason, message, ...(field ? { field } : {}) }],
  });
}

function reason(err: unknown): string {
  const e = err as { code?: string; name?: string };
  return String(e?.code ?? e?.name ?? 'error');
}
