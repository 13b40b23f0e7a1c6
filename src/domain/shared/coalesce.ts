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

/**
 * `coalesce` per key: one run of `task(key)` at a time for each key, callers for a key that
 * arrive while it runs sharing its next run; keys run independently of each other. A key is
 * forgotten once nobody waits for it.
 */
export function coalesceBy<K, T>(task: (key: K) => Promise<T>): (key: K) => Promise<T> {
  const runs = new Map<K, { run: () => Promise<T>; callers: number }>();
  return (key) => {
    let entry = runs.get(key);
    if (!entry) {
      entry = { run: coalesce(() => task(key)), callers: 0 };
      runs.set(key, entry);
    }
    const e = entry;
    e.callers++;
    return e.run().finally(() => {
      if (--e.callers === 0 && runs.get(key) === e) runs.delete(key);
    });
  };
}
