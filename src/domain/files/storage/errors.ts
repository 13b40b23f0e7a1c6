// A store that fails or does not answer is 503 storage_unavailable, never a 500: the client may
// retry, and nothing the database committed depends on the failed call.
import { AppError } from '../../../errors.ts';

export async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw storageError(err);
  }
}

export function storageError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  return new AppError('storage_unavailable', {
    details: [
      { code: 'storage_unavailable', message: 'The file store failed.', reason: reason(err) },
    ],
  });
}

function reason(err: unknown): string {
  const e = err as { code?: string; name?: string };
  return String(e?.code ?? e?.name ?? 'error');
}
