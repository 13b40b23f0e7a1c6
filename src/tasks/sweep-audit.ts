// sweep.audit (hourly): audit entries older than AUDIT_RETENTION_DAYS (default 90) are deleted,
// on the injectable clock. On SQLite the pages freed here, and by the other sweeps of the hour,
// are then given back to the file system (incremental vacuum of the main and audit files), so
// disk use stays flat under a steady load.
import { DAY } from '../clock.ts';
import { reclaimFreePages } from '../db/vacuum.ts';
import type { Task } from '../jobs/types.ts';
import type { Services } from '../services.ts';

export const sweepAudit =
  (s: Pick<Services, 'audit' | 'clock' | 'db'>): Task =>
  async () => {
    const days = Math.max(1, s.audit.retentionDays);
    const cutoff = new Date(s.clock.now().getTime() - days * DAY).toISOString();
    await s.audit.purgeBefore(cutoff);
    await reclaimFreePages(s.db);
  };
