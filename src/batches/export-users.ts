// export.users (its own route only, one item): the file is written from the snapshot before the
// item's transaction (prepare), which completes the export; a failure fails it with a reason.
import type { generate } from '../domain/exports/generate.ts';
import type { ExportsService } from '../domain/exports/service.ts';
import type { BatchType } from '../domain/operations/batch-types.ts';

type Written = Awaited<ReturnType<typeof generate>>;

export function exportUsers(exports: ExportsService): BatchType {
  return {
    permission: 'exports.write',
    maxItems: 1,
    internal: true,
    prepare: (accountId, payload: { export_id: number }) =>
      exports.writeFile(accountId, payload.export_id),
    async apply(tx, _accountId, payload: { export_id: number }, ctx) {
      const done = ctx.prepared as Written;
      await exports.recordCompleted({ tx }, payload.export_id, done);
      return { export_id: String(payload.export_id), file_id: String(done.fileId) };
    },
    failed: (tx, _accountId, payload: { export_id: number }, err) =>
      exports.recordFailed({ tx }, payload.export_id, err),
  };
}
