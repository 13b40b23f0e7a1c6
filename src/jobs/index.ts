// Picks the job engine for the database: graphile-worker on PostgreSQL, the in-process runner on
// SQLite. Both behind src/jobs/types.ts. graphile-worker is imported only on PostgreSQL.
import type { Clock } from '../clock.ts';
import { isPostgres, type Db } from '../db/engine.ts';
import type { Logger } from '../log.ts';
import { SqliteJobs } from './sqlite.ts';
import type { JobEngine } from './types.ts';

export async function createJobEngine(db: Db, clock: Clock, logger: Logger): Promise<JobEngine> {
  if (!isPostgres(db)) return new SqliteJobs(db, clock, logger);
  const { PgJobs } = await import('./pg.ts');
  const jobs = new PgJobs(db, logger);
  await jobs.install();
  return jobs;
}

export * from './types.ts';
