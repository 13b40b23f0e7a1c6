// The operation types of imports, started by their own routes only:
// - import.analysis (one item): the CSV is read before the item's transaction (prepare), which
//   then records the counters; a file that cannot be analysed leaves the import `failed`.
// - import.process (one item per ready row): applies the row (process.ts).
import type { Db } from '../../db/engine.ts';
import { AppError } from '../../errors.ts';
import type { BatchTypes } from '../operations/batch-types.ts';
import type { FilesPort } from '../shared/files-port.ts';
import { newRevision } from '../shared/ids.ts';
import type { Clock } from '../../clock.ts';
import { analyse, UnreadableFile } from './analysis.ts';
import { applyRow, type RowDeps } from './process.ts';
import { importsRepo as repo, type Import } from './repo.ts';
import { ANALYSIS, PROCESS } from './service.ts';

export function importBatchTypes(
  db: Db,
  clock: Clock,
  files: FilesPort,
  deps: RowDeps,
): BatchTypes {
  const failure = (err: unknown) =>
    err instanceof UnreadableFile
      ? err.message
      : err instanceof AppError
        ? err.code
        : 'The file could not be read; analyse again.';
  return {
    [ANALYSIS]: {
      permission: 'imports.write',
      maxItems: 1,
      internal: true,
      async prepare(accountId, payload: { import_id: number }) {
        const imp = await repo.get(db, accountId, payload.import_id);
        if (!imp) throw new AppError('not_found');
        try {
          return await analyse(db, imp, await files.openRead(accountId, imp.fileId));
        } catch (err) {
          // A file that is not CSV fails the analysis for good (the item is not retryable).
          if (err instanceof UnreadableFile)
            throw new AppError('validation_failed', {
              details: [
                {
                  field: 'file_id',
                  code: 'unreadable',
                  message: err.message,
                  reason: 'unreadable',
                },
              ],
            });
          throw err;
        }
      },
      async apply(tx, _accountId, payload: { import_id: number }, ctx) {
        const rows = ctx.prepared as Import['rows'];
        await repo.update(tx, payload.import_id, {
          status: 'analyzed',
          rows,
          failureReason: null,
          revision: newRevision(),
          updatedAt: clock.now().toISOString(),
        });
        const { total, ready, notReady, ignored } = rows;
        return {
          import_id: String(payload.import_id),
          rows: { total, ready, not_ready: notReady, ignored },
        };
      },
      async failed(tx, _accountId, payload: { import_id: number }, err) {
        const cause = err instanceof AppError ? err.details[0]?.message : undefined;
        await repo.update(tx, payload.import_id, {
          status: 'failed',
          failureReason: cause ?? failure(err),
          revision: newRevision(),
          updatedAt: clock.now().toISOString(),
        });
      },
    },
    [PROCESS]: {
      permission: 'imports.write',
      maxItems: Number.MAX_SAFE_INTEGER,
      internal: true,
      apply: (tx, accountId, payload) => applyRow(tx, accountId, payload, deps),
    },
  };
}
