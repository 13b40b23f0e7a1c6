// Unfinished uploads expire 24 hours after creation; this sweep deletes their parts.
import type { Task } from '../jobs/types.ts';
import type { UploadsService } from '../domain/files/uploads.ts';

export const sweepUploads =
  (uploads: UploadsService): Task =>
  async () => {
    while ((await uploads.sweepExpired(500)) === 500);
  };
