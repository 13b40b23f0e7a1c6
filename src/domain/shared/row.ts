// Domain shape -> row: a repository's inserts and updates take camelCase fields and write their
// snake_case columns, so no service spells a column. Fields left undefined are not written.
import { newRevision } from './ids.ts';

/**
 * Column names by field name, computed once each: a chunk of 500 new rows otherwise ran the
 * regular expression 9,000 times. The keys are the fields the code spells; the bound is in case a
 * caller ever passes keys it did not choose.
 */
const columns = new Map<string, string>();
function snake(k: string): string {
  let column = columns.get(k);
  if (column === undefined) {
    column = k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    if (columns.size < 1000) columns.set(k, column);
  }
  return column;
}

/** The columns of `fields`: each key in snake_case, undefined values left out. */
export function toRow(fields: object): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) row[snake(k)] = v;
  return row;
}

/** A new revisioned row: its columns, a fresh revision, created_at = updated_at = now. */
export function newRow(fields: object, now: string): Record<string, unknown> {
  return { ...toRow(fields), revision: newRevision(), created_at: now, updated_at: now };
}

/** A change to a revisioned row: its columns, a fresh revision, updated_at = now. */
export function changedRow(fields: object, now: string): Record<string, unknown> {
  return { ...toRow(fields), revision: newRevision(), updated_at: now };
}
