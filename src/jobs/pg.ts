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
import { workerSchema } from './pg-schema.ts';
import { newWorkerId } from './worker-id.ts';
import { LANE_CONCURRENCY, LANES, laneOf, tasksOf, type Lane } from './lanes.ts';
import type { EnqueueOptions, JobEngine, JobEngineStatus, Schedule, TaskList } from './types.ts';

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

export class PgJobs implements JobEngine {
  readonly workerId = newWorkerId();
  /**
   * One graphile-worker runner per lane (src/jobs/lanes.ts) that has tasks: a runner claims only
   * the tasks of its list, so each lane has its own slots.
   */
  private runners = new Map<Lane, Runner>();
  private lanes: Lane[] = [];
  private stopping = false;
  private restart = new Map<Lane, NodeJS.Timeout>();
  /** Runners being started: a stop that comes meanwhile waits for them and stops them. */
  private launching = new Set<Promise<void>>();
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
      // Each lane's runner LISTENs on one and takes one per claim and completion.
      max: 10,
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
    if (this.lanes.length > 0 && this.runners.size === this.lanes.length) return 'running';
    // Started, but a runner stopped by itself and has not (yet) come back.
    return this.restart.size > 0 ? 'down' : 'idle';
  }

  /** Installs or upgrades graphile-worker's schema: `add_job` must exist before any enqueue. */
  async install(): Promise<void> {
    await runMigrations({
      pgPool: this.pool,
      schema: this.schema,
      logger: this.logger,
    });
  }

  async enqueue({ tx }: { tx: Tx }, task: string, payload: object, options: EnqueueOptions = {}) {
    // run_at null means the database's now(): the queue runs on PostgreSQL's clock. Bulk jobs
    // sort after the main lane's in graphile-worker's (priority, run_at) index, so the main
    // runner finds its jobs in front of an import's 100,000 emails instead of behind them.
    await tx.raw(
      `select 1 from ${quote(this.schema)}.add_job(identifier => ?::text, payload => ?::json, ` +
        `run_at => ?::timestamptz, max_attempts => ?::int, priority => ?::int)`,
      [
        task,
        JSON.stringify(payload),
        options.runAt?.toISOString() ?? null,
        options.maxAttempts ?? null,
        laneOf(task) === 'main' ? 0 : 1,
      ],
    );
  }

  async enqueueMany(
    { tx }: { tx: Tx },
    task: string,
    payloads: object[],
    options: EnqueueOptions = {},
  ) {
    if (payloads.length <= 1) {
      for (const p of payloads) await this.enqueue({ tx }, task, p, options);
      return;
    }
    // add_jobs takes an array of job_spec; null fields take add_job's defaults, as above.
    const spec = {
      identifier: task,
      run_at: options.runAt?.toISOString() ?? null,
      max_attempts: options.maxAttempts ?? null,
      priority: laneOf(task) === 'main' ? 0 : 1,
    };
    const schema = quote(this.schema);
    await tx.raw(
      `select count(*) from ${schema}.add_jobs(array(select json_populate_recordset(` +
        `null::${schema}.job_spec, ?::json)))`,
      [JSON.stringify(payloads.map((payload) => ({ ...spec, payload })))],
    );
  }

  async start(tasks: TaskList, schedules: Schedule[]): Promise<void> {
    if (this.runners.size > 0 || this.lanes.length > 0 || this.stopping) return;
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
    // The sweeps are main-lane tasks: the crontab goes with the main runner.
    const parsedCronItems = parseCronItems(
      schedules.map((s) => ({
        task: s.task,
        match: `*/${s.everyMinutes} * * * *`,
        identifier: s.task,
      })),
    );
    this.lanes = LANES.filter((lane) => Object.keys(tasksOf(taskList, lane)).length > 0);
    const launch = async (lane: Lane): Promise<void> => {
      const runner = await run({
        pgPool: this.pool,
        schema: this.schema,
        concurrency: LANE_CONCURRENCY[lane],
        noHandleSignals: true,
        pollInterval: 1000,
        logger: this.logger,
        taskList: tasksOf(taskList, lane),
        parsedCronItems: lane === 'main' ? parsedCronItems : [],
      });
      if (this.stopping) {
        // Stopped while run() was starting: this runner may already hold a job, and a process
        // that exits now would leave that job's operation leased to it.
        await runner.stop().catch(() => undefined);
        return;
      }
      this.runners.set(lane, runner);
      // graphile-worker stops by itself on a fatal error, or when it hears (database-wide) that a
      // schema was installed or migrated, even another school's or test suite's. A worker that
      // was not asked to stop starts again: run() refuses if this code is too old for the schema.
      void runner.promise
        .catch((err) => this.pino.error({ err, lane }, 'job runner stopped'))
        .then(() => {
          if (this.stopping || this.runners.get(lane) !== runner) return;
          this.runners.delete(lane);
          this.restart.set(
            lane,
            setTimeout(() => {
              this.restart.delete(lane);
              void this.launch(() => launch(lane)).catch((err) =>
                this.pino.error({ err, lane }, 'job runner could not restart'),
              );
            }, 1000),
          );
        });
    };
    await Promise.all(this.lanes.map((lane) => this.launch(() => launch(lane))));
  }

  private async launch(launch: () => Promise<void>): Promise<void> {
    const started = launch();
    this.launching.add(started);
    try {
      await started;
    } finally {
      this.launching.delete(started);
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const timer of this.restart.values()) clearTimeout(timer);
    this.restart.clear();
    await Promise.all([...this.launching].map((p) => p.catch(() => undefined)));
    const runners = [...this.runners.values()];
    this.runners.clear();
    // A runner may have stopped by itself (a fatal error, logged when it happened), or be
    // stopping by itself: graphile-worker shuts its pool down when any worker in the database
    // announces a breaking migration, and then runner.stop() returns at once while that pool's
    // jobs still run. Its promise settles only when every job has finished or released its unit.
    await Promise.all(
      runners.map(async (runner) => {
        await runner.stop().catch(() => undefined);
        await runner.promise.catch(() => undefined);
      }),
    );
  }

  /** Closes graphile-worker's connections (after stop). */
  async close(): Promise<void> {
    await this.stop();
    await this.pool.end();
  }
}
