// Optimistic concurrency: the ETag is the quoted revision; If-Match must name the current one.
import { AppError } from '../../errors.ts';

export const etag = (revision: string): string => `"${revision}"`;

const ENTITY_TAG = /^(?:W\/)?"[^"]*"$/;

/**
 * Throws 412 revision_mismatch when If-Match is present and names another revision. An empty or
 * malformed If-Match (not `*`, not a list of quoted entity tags) names none, so it fails too: a
 * client whose ETag variable was unset must not lose the lost-update guard without noticing.
 */
export function assertRevision(ifMatch: string | undefined, current: string): void {
  if (ifMatch === undefined) return;
  const tags = ifMatch.split(',').map((t) => t.trim());
  if (tags.length === 1 && tags[0] === '*') return;
  const ok =
    tags.every((t) => ENTITY_TAG.test(t)) &&
    tags.some((t) => t.replace(/^W\//, '').slice(1, -1) === current);
  if (!ok) throw new AppError('revision_mismatch');
}
