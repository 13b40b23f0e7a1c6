// The job engine on PostgreSQL: graphile-worker, an established PostgreSQL job queue (jobs added
// with `add_job` inside the caller's transaction, LISTEN/NOTIFY wake-ups, SKIP LOCKED claims,
// `run_at`, retries with backoff, and a crontab for the sweeps). Several `npm start` instances
// and `npm run worker` processes on one database share the work.
import { Logger, parseCronItems, run, runMigrations, type Runner } from 'graphile-worker';
import type pg from 'pg';
import type { Db, Tx } from '../db/engine.ts';
import { pgConnectionConfig } from '../db/pg-connection.ts';
import type { Logger as Pino } from '../log.ts';
import { jobQueuePool } from './pg-pool.ts';
import { newWorkerId } from './worker-id.ts';
import type { EnqueueOptions, JobEngine, JobEngineStatus, Schedule, TaskList } from './types.ts';

/** graphile-worker's own schema: beside the application's (tests give each suite a schema). */
export function workerSchema(db: Db): string {
  const path = (db.client.config as { searchPath?: string[] }).searchPath;
  return path?.length ? `${path[0]}_jobs` : 'graphile_worker';
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

export class PgJobs implements JobEngine {
  readonly workerId = newWorkerId();
  private runner: Runner | undefined;
  private stopping = false;
  private restart: NodeJS.Timeout | undefined;
  /** A runner being started: a stop that comes meanwhile waits for it and stops it. */
  private launching: Promise<void> | undefined;
  private readonly schema: string;
  /** graphile-worker's own connections (it LISTENs on one): not taken from the request pool. */
  private readonly pool: pg.Pool;
  private readonly logger: Logger;
  private readonly db: Db;
  private readonly pino: Pino;

  constructor(db: Db, pino: Pino) {
    this.db = db;
    this.pino = pino;
    this.schema = workerSchema(db);
    this.pool = jobQueuePool({
      ...pgConnectionConfig(db),
      max: 6,
      // A process that only enqueues (the admin CLI) may exit while connections idle here.
      allowExitOnIdle: true,
    });
    // A dropped idle connection must not crash the process; graphile-worker reconnects.
    this.pool.on('error', (err) => pino.warn({ err }, 'job queue connection lost'));
    this.pool.on('connect', (client) =>
      client.on('error', (err) => pino.warn({ err }, 'job queue connection lost')),
    );
    this.logger = new Logger((scope) => (level, message, meta) => {
      const line = { scope, ...meta };
      if (level === 'error') pino.error(line, message);
      else if (level === 'warning') pino.warn(line, message);
      else if (level === 'info') pino.debug(line, message);
    });
  }

  get status(): JobEngineStatus {
    if (this.stopping) return 'stopped';
    if (this.runner) return 'running';
    // Started, but its runner stopped by itself and has not (yet) come back.
    return this.restart ? 'down' : 'idle';
  }

  /** Installs or upgrades graphile-worker's schema: `add_job` must exist before any enqueue. */
  async install(): Promise<void> {
    await runMigrations({
      pgPool: this.pool,
      schema: this.schema,
      logger: this.logger,
    });
  }

  async enqueue(tx: Tx, task: string, payload: object, options: EnqueueOptions = {}) {
    // run_at null means the database's now(): the queue runs on PostgreSQL's clock.
    await tx.raw(
      `select 1 from ${quote(this.schema)}.add_job(identifier => ?::text, payload => ?::json, ` +
        `run_at => ?::timestamptz, max_attempts => ?::int)`,
      [
        task,
        JSON.stringify(payload),
        options.runAt?.toISOString() ?? null,
        options.maxAttempts ?? null,
      ],
    );
  }

  async start(tasks: TaskList, schedules: Schedule[]): Promise<void> {
    if (this.runner || this.stopping) return;
    const taskList = Object.fromEntries(
      Object.entries(tasks).map(([name, task]) => [
        name,
        (payload: unknown, helpers: any) =>
          task(payload, {
            jobId: String(helpers.job.id),
            attempt: helpers.job.attempts,
            workerId: this.workerId,
            signal: helpers.abortSignal,
          }),
      ]),
    );
    const parsedCronItems = parseCronItems(
      schedules.map((s) => ({
        task: s.task,
        match: `*/${s.everyMinutes} * * * *`,
        identifier: s.task,
      })),
    );
    const launch = async (): Promise<void> => {
      const runner = await run({
        pgPool: this.pool,
        schema: this.schema,
        concurrency: 4,
        noHandleSignals: true,
        pollInterval: 1000,
        logger: this.logger,
        taskList,
        parsedCronItems,
      });
      if (this.stopping) {
        // Stopped while run() was starting: this runner may already hold a job, and a process
        // that exits now would leave that job's operation leased to it.
        await runner.stop().catch(() => undefined);
        return;
      }
      this.runner = runner;
      // graphile-worker stops by itself on a fatal error, or when it hears (database-wide) that a
      // schema was installed or migrated, even another school's or test suite's. A worker that
      // was not asked to stop starts again: run() refuses if this code is too old for the schema.
      void runner.promise
        .catch((err) => this.pino.error({ err }, 'job runner stopped'))
        .then(() => {
          if (this.stopping || this.runner !== runner) return;
          this.runner = undefined;
          this.restart = setTimeout(() => {
            void this.launch(launch).catch((err) =>
              this.pino.error({ err }, 'job runner could not restart'),
            );
          }, 1000);
        });
    };
    await this.launch(launch);
  }

  private async launch(launch: () => Promise<void>): Promise<void> {
    const started = launch();
    this.launching = started;
    try {
      await started;
    } finally {
      if (this.launching === started) this.launching = undefined;
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restart);
    await this.launching?.catch(() => undefined);
    const runner = this.runner;
    this.runner = undefined;
    // The runner may have stopped by itself (a fatal error, logged when it happened), or be
    // stopping by itself: graphile-worker shuts its pool down when any worker in the database
    // announces a breaking migration, and then runner.stop() returns at once while that pool's
    // jobs still run. Its promise settles only when every job has finished or released its unit.
    await runner?.stop().catch(() => undefined);
    await runner?.promise.catch(() => undefined);
  }

  /** Closes graphile-worker's connections (after stop). */
  async close(): Promise<void> {
    await this.stop();
    await this.pool.end();
  }
}
