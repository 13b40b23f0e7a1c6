// The job engine on SQLite, the embedded default: a `jobs` table and an in-process runner. One
// process owns the database file, so the runner is woken when a transaction commits (an enqueued
// job is then visible): no polling delay on the happy path. A one-second poll picks up jobs that
// another process (the admin CLI, `npm run worker`) added, and jobs whose time has come.
// The runner's own statements are prepared once (knex compiles and prepares each query anew, which
// cost more than the short jobs themselves); free slots are claimed together, in one transaction,
// and finished jobs are deleted together in the next one (a job is deleted after its task
// returned, as before: a process that dies in between runs it again, as it would have anyway).
import type Database from 'better-sqlite3';
import type { Db, Tx } from '../db/engine.ts';
import { insertMany, insertRowSqlite, statement } from '../db/statements.ts';
import { onSqliteCommit, transaction } from '../db/tx.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import { isDeadWorker, newWorkerId } from './worker-id.ts';
import { LANE_CONCURRENCY, LANES, laneOf, tasksOf, type Lane } from './lanes.ts';
import {
  JobReleased,
  type EnqueueOptions,
  type JobEngine,
  type JobEngineStatus,
  type Schedule,
  type TaskList,
} from './types.ts';

const POLL_MS = 1000;

interface JobRow {
  id: number;
  task: string;
  payload: string;
  attempts: number;
  max_attempts: number;
}

/** graphile-worker's backoff: exp(min(attempts, 10)) seconds. */
const backoffMs = (attempts: number) => Math.round(Math.exp(Math.min(attempts, 10)) * 1000);

export class SqliteJobs implements JobEngine {
  readonly workerId = newWorkerId();
  private tasks: TaskList = {};
  private running = new Set<Promise<void>>();
  /** Jobs running in each lane (src/jobs/lanes.ts): each lane has its own slots. */
  private busy: Record<Lane, number> = { main: 0, bulk: 0, webhooks: 0 };
  /** Jobs whose task returned, not deleted yet. */
  private finished: number[] = [];
  private started = false;
  private stopping = false;
  private dirty = false;
  private pumping = false;
  private timer: NodeJS.Timeout | undefined;
  private timers: NodeJS.Timeout[] = [];
  private unsubscribe: (() => void) | undefined;
  private readonly abort = new AbortController();
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(db: Db, clock: Clock, logger: Logger) {
    this.db = db;
    this.clock = clock;
    this.logger = logger;
  }

  get status(): JobEngineStatus {
    return this.stopping ? 'stopped' : this.started ? 'running' : 'idle';
  }

  enqueue({ tx }: { tx: Tx }, task: string, payload: object, options: EnqueueOptions = {}) {
    return this.insert({ tx }, task, payload, options, null);
  }

  async enqueueMany(
    { tx }: { tx: Tx },
    task: string,
    payloads: object[],
    options: EnqueueOptions = {},
  ) {
    if (payloads.length === 0) return;
    const now = this.clock.now().toISOString();
    const runAt = (options.runAt ?? this.clock.now()).toISOString();
    await insertMany(
      { tx },
      'jobs',
      payloads.map((payload) => ({
        task,
        payload: JSON.stringify(payload),
        run_at: runAt,
        max_attempts: options.maxAttempts ?? 25,
        key: null,
        created_at: now,
      })),
    );
    this.dirty = true;
  }

  private async insert(
    { tx }: { tx: Tx },
    task: string,
    payload: object,
    options: EnqueueOptions,
    key: string | null,
  ) {
    await insertRowSqlite({ tx }, 'jobs', {
      task,
      payload: JSON.stringify(payload),
      run_at: (options.runAt ?? this.clock.now()).toISOString(),
      max_attempts: options.maxAttempts ?? 25,
      key,
      created_at: this.clock.now().toISOString(),
    });
    // Visible once the caller's transaction commits: the commit listener pumps then.
    this.dirty = true;
  }

  async start(tasks: TaskList, schedules: Schedule[]): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.tasks = tasks;
    await this.releaseDeadWorkers();
    this.unsubscribe = onSqliteCommit(this.db, () => {
      if (this.dirty) this.wake();
    });
    for (const s of schedules) {
      const every = s.everyMinutes * 60_000;
      const run = () => void this.schedule(s.task).catch((err) => this.logger.error({ err }));
      run();
      this.timers.push(setInterval(run, every).unref());
    }
    this.wake();
  }

  async stop(): Promise<void> {
    if (!this.started || this.stopping) return;
    this.stopping = true;
    this.abort.abort();
    clearTimeout(this.timer);
    for (const t of this.timers) clearInterval(t);
    this.unsubscribe?.();
    // A claim under way when stop began adds its jobs to `running` after this: wait for it too,
    // so that every job that ran is deleted here (one left behind would run again at the next
    // start).
    while (this.pumping || this.running.size > 0) {
      if (this.running.size > 0) await Promise.allSettled([...this.running]);
      else await new Promise((resolve) => setImmediate(resolve));
    }
    await this.deleteFinished();
  }

  private async deleteFinished(): Promise<void> {
    const done = this.finished.splice(0);
    if (done.length === 0) return;
    await transaction(this.db, async (tx) => {
      for (const id of done) await tx('jobs').where({ id }).delete();
    }).catch((err) => this.logger.error({ err }, 'job runner: could not delete finished jobs'));
  }

  close(): Promise<void> {
    return this.stop();
  }

  /** Jobs locked by a process of this host that died (kill -9) are free again. */
  private async releaseDeadWorkers(): Promise<void> {
    const owners: { locked_by: string }[] = await this.db('jobs')
      .distinct('locked_by')
      .whereNotNull('locked_by');
    const dead = owners.map((o) => o.locked_by).filter(isDeadWorker);
    if (dead.length === 0) return;
    await transaction(this.db, (tx) =>
      tx('jobs').whereIn('locked_by', dead).update({ locked_by: null, locked_at: null }),
    );
    this.logger.info({ workers: dead }, 'released the jobs of workers that died');
  }

  /** Enqueues a scheduled task unless a run of it is already waiting. */
  private async schedule(task: string): Promise<void> {
    const key = `schedule:${task}`;
    await transaction(this.db, async (tx) => {
      if (!(await tx('jobs').where({ key }).first('id')))
        await this.insert({ tx }, task, {}, {}, key);
    });
  }

  private wake(): void {
    if (this.stopping || !this.started) return;
    this.dirty = false;
    clearTimeout(this.timer);
    setImmediate(() => void this.pump());
  }

  /** Free slots of each lane. */
  private free(): Record<Lane, number> {
    return Object.fromEntries(
      LANES.map((lane) => [lane, LANE_CONCURRENCY[lane] - this.busy[lane]]),
    ) as Record<Lane, number>;
  }

  /** Claims and starts due jobs up to each lane's concurrency, then sleeps until a wake or the poll. */
  private async pump(): Promise<void> {
    if (this.pumping || this.stopping) return;
    this.pumping = true;
    try {
      while (!this.stopping) {
        const free = this.free();
        if (!LANES.some((lane) => free[lane] > 0) && !this.finished.length) break;
        const jobs = await this.claim(free);
        if (jobs.length === 0) break;
        for (const job of jobs) {
          const lane = laneOf(job.task);
          this.busy[lane]++;
          const run = this.run(job).finally(() => {
            this.busy[lane]--;
            this.running.delete(run);
            this.wake();
          });
          this.running.add(run);
        }
      }
    } catch (err) {
      this.logger.error({ err }, 'job runner: claim failed');
    } finally {
      this.pumping = false;
      if (!this.stopping) {
        clearTimeout(this.timer);
        this.timer = setTimeout(() => void this.pump(), POLL_MS).unref();
      }
    }
  }

  /**
   * Deletes the jobs that finished since the last claim, then claims each lane's due jobs up to
   * its free slots: the oldest of its tasks' due jobs, read task by task through the (task,
   * run_at, id) index, so a lane never walks the other lane's pending jobs. A job of a task this
   * process does not run stays for a process that does.
   */
  private claim(free: Record<Lane, number>): Promise<JobRow[]> {
    const now = this.clock.now().toISOString();
    const done = this.finished.splice(0);
    return transaction(this.db, async (tx) => {
      const conn = (await tx.client.acquireConnection()) as Database.Database;
      for (const id of done) statement(conn, 'DELETE FROM jobs WHERE id = ?').run(id);
      const rows: JobRow[] = [];
      for (const lane of LANES) {
        const limit = free[lane];
        if (limit <= 0) continue;
        // The LIMIT as a literal (one text per lane's free slots): a `LIMIT ?` statement is
        // planned again at every run (valueBlind, src/db/sqlite-statements.ts).
        const due = statement(
          conn,
          'SELECT id, task, payload, attempts, max_attempts, run_at FROM jobs WHERE task = ? ' +
            'AND locked_by IS NULL AND run_at <= ? AND attempts < max_attempts ' +
            `ORDER BY run_at, id LIMIT ${Math.floor(limit)}`,
        );
        const candidates = Object.keys(tasksOf(this.tasks, lane)).flatMap(
          (task) => due.all(task, now) as (JobRow & { run_at: string })[],
        );
        candidates.sort((a, b) =>
          a.run_at < b.run_at ? -1 : a.run_at > b.run_at ? 1 : a.id - b.id,
        );
        rows.push(...candidates.slice(0, limit));
      }
      const lock = statement(
        conn,
        'UPDATE jobs SET locked_by = ?, locked_at = ?, key = NULL, attempts = attempts + 1 WHERE id = ?',
      );
      for (const row of rows) {
        lock.run(this.workerId, now, row.id);
        row.attempts += 1;
      }
      return rows;
    }).catch((err) => {
      // Not deleted: they are deleted with the next claim.
      this.finished.push(...done);
      throw err;
    });
  }

  private async run(job: JobRow): Promise<void> {
    const task = this.tasks[job.task];
    try {
      if (!task) throw new Error(`no task named ${job.task}`);
      await task(JSON.parse(job.payload), {
        jobId: String(job.id),
        attempt: job.attempts,
        workerId: this.workerId,
        signal: this.abort.signal,
      });
      // Deleted with the next claim (the wake after this run), or at stop.
      this.finished.push(job.id);
    } catch (err) {
      if (err instanceof JobReleased) {
        await transaction(this.db, (tx) =>
          tx('jobs')
            .where({ id: job.id })
            .update({ locked_by: null, locked_at: null })
            .decrement('attempts', 1),
        );
        return;
      }
      this.logger.warn({ err, job: job.id, task: job.task }, 'job failed; it will be retried');
      const runAt = new Date(this.clock.now().getTime() + backoffMs(job.attempts));
      await transaction(this.db, (tx) =>
        tx('jobs')
          .where({ id: job.id })
          .update({
            locked_by: null,
            locked_at: null,
            run_at: runAt.toISOString(),
            last_error: String((err as Error)?.stack ?? err).slice(0, 4000),
          }),
      ).catch((e) => this.logger.error({ err: e }, 'job runner: could not record a failure'));
    }
  }
}
