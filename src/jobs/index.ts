// Picks the job engine for the database: graphile-worker on PostgreSQL, the in-process runner on
// SQLite. Both behind src/jobs/types.ts.
import type { Clock } from '../clock.ts';
import { isPostgres, type Db } from '../db/engine.ts';
import type { Logger } from '../log.ts';
import { PgJobs } from './pg.ts';
import { SqliteJobs } from './sqlite.ts';
import type { JobEngine } from './types.ts';

export async function createJobEngine(db: Db, clock: Clock, logger: Logger): Promise<JobEngine> {
  if (!isPostgres(db)) return new SqliteJobs(db, clock, logger);
  const jobs = new PgJobs(db, logger);
  await jobs.install();
  return jobs;
}

export * from './types.ts';
