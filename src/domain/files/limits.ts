// The upload limits of each purpose, and the part layout. Parts follow S3's rules (at least
// 5 MiB except the last, at most 10,000), so the same upload works against either store.
import { AppError } from '../../errors.ts';
import type { Purpose } from './repo.ts';
import { baseType } from './verify.ts';

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;
export const MIN_PART_SIZE = 5 * MiB;
export const MAX_PART_SIZE = 5 * GiB;
export const MAX_PARTS = 10_000;
export const DEFAULT_PART_SIZE = 8 * MiB;
/** Unfinished uploads expire after 24 hours; their bytes are then deleted (sweep.uploads). */
export const UPLOAD_TTL_MS = 24 * 3_600_000;

export const PURPOSES: Record<Purpose, { maxSize: number; types: string[] | null }> = {
  import: { maxSize: 512 * MiB, types: ['text/csv'] },
  // Written by the server only (exports); POST /uploads refuses it.
  export: { maxSize: 5 * GiB, types: null },
  attachment: { maxSize: 5 * GiB, types: null },
};

const invalid = (field: string, reason: string, message: string) =>
  new AppError('validation_failed', {
    details: [{ field, code: 'validation_failed', reason, message }],
  });

export function checkUploadRequest(input: {
  purpose: Purpose;
  contentType: string;
  size: number;
}): void {
  if (input.purpose === 'export') {
    throw invalid('purpose', 'server_only', 'Files of purpose export are written by the server.');
  }
  const rule = PURPOSES[input.purpose];
  if (input.size > rule.maxSize) {
    throw invalid(
      'size',
      'too_large',
      `A ${input.purpose} file has at most ${rule.maxSize} bytes.`,
    );
  }
  if (rule.types && !rule.types.includes(baseType(input.contentType))) {
    throw invalid(
      'content_type',
      'type_not_allowed',
      `A ${input.purpose} file is ${rule.types.join(' or ')}.`,
    );
  }
}

/** The part size: the client's, or the default grown until 10,000 parts hold the file. */
export function partLayout(size: number, requested: number | undefined) {
  const partSize =
    requested ?? Math.max(DEFAULT_PART_SIZE, Math.ceil(size / MAX_PARTS / MiB) * MiB);
  if (partSize < MIN_PART_SIZE || partSize > MAX_PART_SIZE) {
    throw invalid('part_size', 'out_of_range', 'part_size is between 5 MiB and 5 GiB.');
  }
  const partsCount = Math.max(1, Math.ceil(size / partSize));
  if (partsCount > MAX_PARTS) {
    throw invalid('part_size', 'too_many_parts', 'The file would have more than 10,000 parts.');
  }
  return { partSize, partsCount };
}

/** Bytes of part `n` (1-based) in the layout. */
export function partBytes(size: number, partSize: number, n: number): number {
  return Math.min(partSize, size - (n - 1) * partSize);
}
