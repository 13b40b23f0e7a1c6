// Where graphile-worker keeps its tables, apart from src/jobs/pg.ts so that reading the queue's
// figures (metrics) does not load graphile-worker in a process that runs on SQLite.
import type { Db } from '../db/engine.ts';

/** graphile-worker's own schema: beside the application's (tests give each suite a schema). */
export function workerSchema(db: Db): string {
  const path = (db.client.config as { searchPath?: string[] }).searchPath;
  return path?.length ? `${path[0]}_jobs` : 'graphile_worker';
}
