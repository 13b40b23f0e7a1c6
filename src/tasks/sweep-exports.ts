// sweep.exports (hourly): exports 7 days past completion lose their file (bytes deleted).
import type { Task } from '../jobs/types.ts';
import type { ExportsService } from '../domain/exports/service.ts';

export const sweepExports =
  (exports: ExportsService): Task =>
  async () => {
    await exports.expireDue();
  };
