// How much work waits in the job queue, for the metrics: the SQLite runner's `jobs` table, or the
// `jobs` view graphile-worker 0.18 keeps in its schema (`<schema>.jobs`, over `_private_jobs`).
// Read on every scrape, so one aggregate query each.
import type { Clock } from '../clock.ts';
import { isPostgres, type Db } from '../db/engine.ts';
import { workerSchema } from './pg-schema.ts';

export interface QueueStats {
  /** Due and not claimed: waiting for a worker. */
  ready: number;
  /** Claimed by a worker right now. */
  running: number;
  /** Not due yet (a retry's backoff, a `runAt`). */
  scheduled: number;
  /** Out of attempts: kept for inspection, never run again. */
  failed: number;
  /** How long the oldest ready job has waited past its run time, in seconds (0 when none). */
  oldestReadyAgeSeconds: number;
}

const num = (v: unknown) => Number(v ?? 0);

export async function queueStats(db: Db, clock: Clock): Promise<QueueStats> {
  if (isPostgres(db)) {
    // graphile-worker runs on PostgreSQL's clock (run_at defaults to now()), so the age does too.
    const schema = `"${workerSchema(db).replace(/"/g, '""')}"`;
    const { rows } = await db.raw(
      `select
         count(*) filter (where locked_at is null and attempts < max_attempts and run_at <= now()) as ready,
         count(*) filter (where locked_at is not null) as running,
         count(*) filter (where locked_at is null and attempts < max_attempts and run_at > now()) as scheduled,
         count(*) filter (where locked_at is null and attempts >= max_attempts) as failed,
         coalesce(extract(epoch from now() - min(run_at) filter (
           where locked_at is null and attempts < max_attempts and run_at <= now())), 0) as oldest
       from ${schema}.jobs`,
    );
    const r = rows[0];
    return {
      ready: num(r.ready),
      running: num(r.running),
      scheduled: num(r.scheduled),
      failed: num(r.failed),
      oldestReadyAgeSeconds: Math.max(0, num(r.oldest)),
    };
  }
  // The SQLite runner's jobs wait on the injectable clock (it claims with clock.now()).
  const now = clock.now();
  const iso = now.toISOString();
  const ready = 'locked_by is null and attempts < max_attempts and run_at <= ?';
  const rows = await db.raw(
    `select
       sum(case when ${ready} then 1 else 0 end) as ready,
       sum(case when locked_by is not null then 1 else 0 end) as running,
       sum(case when locked_by is null and attempts < max_attempts and run_at > ? then 1 else 0 end) as scheduled,
       sum(case when locked_by is null and attempts >= max_attempts then 1 else 0 end) as failed,
       min(case when ${ready} then run_at end) as oldest
     from jobs`,
    [iso, iso, iso],
  );
  const r = rows[0];
  return {
    ready: num(r.ready),
    running: num(r.running),
    scheduled: num(r.scheduled),
    failed: num(r.failed),
    oldestReadyAgeSeconds: r.oldest
      ? Math.max(0, (now.getTime() - Date.parse(r.oldest)) / 1000)
      : 0,
  };
}
