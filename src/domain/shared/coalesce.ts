/**
 * One run of `task` at a time; callers that arrive while it runs share the next run, which starts
 * after the current one ends. Each caller thus gets a result produced by a run that began after
 * its call (a read that sees what was committed before it, a write that includes its own news),
 * and under load there is one run per round trip rather than one per caller.
 */
export function coalesce<T>(task: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | null = null;
  let queued: Promise<T> | null = null;
  const run = (): Promise<T> => {
    if (!running) {
      running = task().finally(() => {
        running = null;
      });
      return running;
    }
    queued ??= running
      .catch(() => undefined)
      .then(() => {
        queued = null;
        return run();
      });
    return queued;
  };
  return run;
}
