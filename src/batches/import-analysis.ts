// import.analysis (its own route only, one item): the CSV is read before the item's transaction
// (prepare), which then records the counters; a file that cannot be analysed leaves the import
// `failed`.
import type { Clock } from '../clock.ts';
import type { Db } from '../db/engine.ts';
import { analyse, UnreadableFile } from '../domain/imports/analysis.ts';
import { importsRepo as repo, type Import } from '../domain/imports/repo.ts';
import type { BatchType } from '../domain/operations/batch-types.ts';
import type { FilesPort } from '../domain/shared/files-port.ts';
import { newRevision } from '../domain/shared/ids.ts';
import { AppError } from '../errors.ts';

export function importAnalysis(db: Db, clock: Clock, files: FilesPort): BatchType {
  const failure = (err: unknown) =>
    err instanceof UnreadableFile
      ? err.message
      : err instanceof AppError
        ? err.code
        : 'The file could not be read; analyse again.';
  return {
    permission: 'imports.write',
    maxItems: 1,
    internal: true,
    async prepare(accountId, payload: { import_id: number }) {
      const imp = await repo.get({ tx: db }, accountId, payload.import_id);
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
      await repo.update({ tx }, payload.import_id, {
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
      await repo.update({ tx }, payload.import_id, {
        status: 'failed',
        failureReason: cause ?? failure(err),
        revision: newRevision(),
        updatedAt: clock.now().toISOString(),
      });
    },
  };
}
