// Two lanes of job runners per process, each with its own slots, so that per-row work cannot hold
// back the rest: an import's 100,000 welcome emails (one job each) made a users export wait
// behind all of them while the queue was one FIFO. Within a lane, jobs still go by run_at, id.
// Webhook deliveries have a lane of their own: a receiver waits for events in seconds, and the
// same import's emails (or a sandbox scenario's) would otherwise hold their slots.
export type Lane = 'main' | 'bulk' | 'webhooks';

/** Tasks enqueued once per row or per event, in the thousands. */
const LANE_OF_TASK: Readonly<Record<string, Lane>> = {
  'email.send': 'bulk',
  'webhook.deliver': 'webhooks',
};

export const laneOf = (task: string): Lane =>
  Object.hasOwn(LANE_OF_TASK, task) ? LANE_OF_TASK[task]! : 'main';

/** Jobs one process runs at a time in each lane (one lane of 4 before). */
export const LANE_CONCURRENCY: Readonly<Record<Lane, number>> = { main: 4, bulk: 4, webhooks: 4 };

export const LANES = Object.keys(LANE_CONCURRENCY) as Lane[];

/** The tasks of a task list that run in `lane`. */
export function tasksOf<T>(tasks: Record<string, T>, lane: Lane): Record<string, T> {
  return Object.fromEntries(Object.entries(tasks).filter(([name]) => laneOf(name) === lane));
}
