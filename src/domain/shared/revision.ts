// Optimistic concurrency: the ETag is the quoted revision; If-Match must name the current one.
import { AppError } from '../../errors.ts';

export const etag = (revision: string): string => `"${revision}"`;

/** Throws 412 revision_mismatch when If-Match is present and names another revision. */
export function assertRevision(ifMatch: string | undefined, current: string): void {
  if (ifMatch === undefined) return;
  const tags = ifMatch.split(',').map((t) => t.trim());
  if (tags.includes('*')) return;
  const ok = tags.some((t) => t.replace(/^W\//, '').replace(/^"(.*)"$/, '$1') === current);
  if (!ok) throw new AppError('revision_mismatch');
}
