// Schemas compiled on first use. A process uses a few of the contract's ~120 operations, ~40 event
// types and their batch and plan schemas; compiling all of them at start was most of the CPU of
// a start (about 1 s of a test's boot). The server compiles the rest after listening (warm()),
// one at a time between other work (warmAll).

/** `make`'s value, computed at the first call and kept. */
export function once<T>(make: () => T): () => T {
  let done = false;
  let value: T;
  return () => {
    if (!done) {
      value = make();
      done = true;
    }
    return value;
  };
}

/** A map whose values are each computed at their first `get` and kept. */
export function lazyMap<K, V>(entries: Iterable<[K, () => V]>): Map<K, () => V> {
  return new Map([...entries].map(([k, make]) => [k, once(make)]));
}

/**
 * Computes each value now (a schema that cannot compile throws here), one per event-loop turn so
 * that requests arriving meanwhile are not held up.
 */
export async function warmAll(makers: Iterable<() => unknown>): Promise<void> {
  for (const make of makers) {
    make();
    await new Promise((r) => setImmediate(r));
  }
}
