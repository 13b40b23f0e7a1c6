// The job engine's one interface for durable background work (operations, sweeps, and later
// webhook deliveries and exports). A job is enqueued inside the caller's transaction, so it exists
// if and only if the change that asked for it committed.
import type { Tx } from '../db/engine.ts';

export interface EnqueueOptions {
  /** Not before this instant (default: now). */
  runAt?: Date;
  /** Tries before the job is given up (default 25, as graphile-worker). */
  maxAttempts?: number;
}

export interface TaskContext {
  jobId: string;
  /** 1 on the first run. */
  attempt: number;
  /** Who runs it: `host/pid/random`, also the owner written into leases. */
  workerId: string;
  /** Aborted when the worker is asked to stop: finish or release the current unit, then return. */
  signal: AbortSignal;
}

export type Task = (payload: any, ctx: TaskContext) => Promise<void>;
export type TaskList = Record<string, Task>;

/** A task run every `everyMinutes` (sweeps); at most one run waits at a time. */
export interface Schedule {
  task: string;
  everyMinutes: number;
}

export interface JobEngine {
  enqueue(
    { tx }: { tx: Tx },
    task: string,
    payload: object,
    options?: EnqueueOptions,
  ): Promise<void>;
  /**
   * One job of `task` per payload, in this order, in the caller's transaction: one statement
   * instead of one per job (graphile-worker's add_jobs; one prepared insert per row on SQLite).
   */
  enqueueMany(
    { tx }: { tx: Tx },
    task: string,
    payloads: object[],
    options?: EnqueueOptions,
  ): Promise<void>;
  /** Starts claiming and running jobs (npm start with WORKERS, npm run worker). */
  start(tasks: TaskList, schedules: Schedule[]): Promise<void>;
  /** Stops claiming, lets running tasks finish or release their unit, then resolves. */
  stop(): Promise<void>;
  /** Stops, and closes the engine's own connections. */
  close(): Promise<void>;
  readonly workerId: string;
  /** For the readiness check: `down` means started, not stopped, and yet not running jobs. */
  readonly status: JobEngineStatus;
}

export type JobEngineStatus = 'idle' | 'running' | 'down' | 'stopped';

/**
 * Thrown by a task that stopped before its work was done because the worker is stopping: the job
 * runs again later, where it left off. On SQLite it is released with no attempt used up. On
 * PostgreSQL graphile-worker has no release: it records a failed attempt and retries after its
 * backoff (seconds for the first few); what the task did is committed, so nothing is lost or
 * repeated, only an attempt of the job's budget is spent.
 */
export class JobReleased extends Error {
  constructor() {
    super('the worker is stopping; the job will run again');
  }
}
