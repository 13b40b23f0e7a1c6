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

/**
 * The guarded write every revisioned resource shares: `load` reads the row (and throws not_found
 * or any precondition of its own), If-Match is checked against its revision, `check` runs the
 * resource's own rules on the row as read, then `write` changes it guarded by the revision read
 * when If-Match was sent, and returns the rows it hit. Hitting none means the row vanished (no
 * If-Match: 404 not_found) or changed (412 revision_mismatch) between the read and the write;
 * `lost` may name a finer cause. Returns the row as read; the caller re-reads what it shows.
 */
export async function guardedWrite<T extends { revision: string }>(g: {
  load: () => Promise<T>;
  ifMatch: string | undefined;
  check?: (row: T) => void | Promise<void>;
  write: (row: T, guard: string | undefined) => Promise<number>;
  lost?: (row: T) => Promise<AppError>;
}): Promise<T> {
  const row = await g.load();
  assertRevision(g.ifMatch, row.revision);
  await g.check?.(row);
  const hit = await g.write(row, g.ifMatch === undefined ? undefined : row.revision);
  if (hit === 0) {
    throw g.lost
      ? await g.lost(row)
      : new AppError(g.ifMatch === undefined ? 'not_found' : 'revision_mismatch');
  }
  return row;
}
