// import.process (its own route only, one item per ready row): applies the row through the
// enrollments service (src/domain/imports/process.ts); a chunk of rows at once on both engines.
import { applyRow, applyRows, type RowDeps } from '../domain/imports/process.ts';
import type { BatchType } from '../domain/operations/batch-types.ts';

export function importProcess(deps: RowDeps): BatchType {
  return {
    permission: 'imports.write',
    maxItems: Number.MAX_SAFE_INTEGER,
    internal: true,
    apply: (tx, accountId, payload) => applyRow({ tx }, accountId, payload, deps),
    applyMany: (tx, accountId, payloads) => applyRows({ tx }, accountId, payloads, deps),
    setBasedOnSqlite: true,
    // PostgreSQL: ~25 round trips a chunk whatever its length (spec/DECISIONS.md).
    setChunk: 500,
  };
}
