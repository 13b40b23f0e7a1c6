// files.purge: deletes the bytes of the files a sandbox reset deleted (enqueued in the reset's
// transaction, so it exists exactly when the reset committed; a retry deletes nothing twice).
import type { Task } from '../jobs/types.ts';
import type { FilesService } from '../domain/files/service.ts';

export interface FilesPurgePayload {
  account_id: number;
  deleted_at: string;
}

export const filesPurge =
  (files: FilesService): Task =>
  async (payload: FilesPurgePayload) => {
    await files.purgeDeleted(payload.account_id, payload.deleted_at);
  };
