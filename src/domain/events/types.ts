// What other contexts need to know of events, without importing the events service: the recorded
// event and the recorder they are given (so tests and tools can build services without one).
import type { Tx } from '../../db/engine.ts';

export interface Event {
  id: number;
  accountId: number;
  type: string;
  version: string;
  data: Record<string, unknown>;
  createdAt: string;
}

/**
 * The event as every consumer sees it, with `data` exactly as recorded: GET /events, webhook
 * bodies and event streams send this one shape (a receiver compares them byte for byte).
 */
export function eventEnvelope(e: Event) {
  return {
    object: 'event' as const,
    id: String(e.id),
    type: e.type,
    version: e.version,
    created_at: e.createdAt,
    data: e.data,
  };
}

/**
 * PostgreSQL: what a record hook adds to the statement that inserts events (EventsService.onRecord):
 * `sql`, a CTE body (a SELECT, or an INSERT/UPDATE ... RETURNING) that reads the events being
 * inserted as `e` (id, account_id, type, version, created_at), with `?` for `params`. It runs on
 * the insert's snapshot: it sees what was committed when the statement started, and the new
 * events only through `e`. Its rows come back to the hook as JSON objects.
 */
export interface RecordStep {
  sql: string;
  params: unknown[];
}

export interface NewEvent {
  accountId: number;
  type: string;
  data: Record<string, unknown>;
}

/** Records an event in the caller's transaction: it exists if and only if the change commits. */
export interface EventRecorder {
  record({ tx }: { tx: Tx }, event: NewEvent): Promise<Event>;
  /** Several events at once, in this order (ids ascending): what record() one after the other does. */
  recordMany?({ tx }: { tx: Tx }, events: NewEvent[]): Promise<Event[]>;
  /**
   * PostgreSQL, where the recorder can: runs `insert` and records the event `about` its row in
   * the same statement (one round trip fewer than the insert, then record()). Undefined when it
   * cannot: the caller then inserts, then records.
   */
  recordWithInsert?(
    { tx }: { tx: Tx },
    insert: RecordedInsert,
    about: (row: Record<string, unknown>) => NewEvent,
  ): Promise<{ row: Record<string, unknown>; event: Event } | null | undefined>;
}

/**
 * An INSERT ... RETURNING * of at most one row (`?` placeholders), for recordWithInsert, and the
 * row's columns as it writes them. The event about the row must depend only on those columns and
 * the row's `id` (the one the database assigns): recordWithInsert builds it before the statement
 * runs, then fills the id in. Null from recordWithInsert: the insert wrote nothing (no event).
 */
export interface RecordedInsert {
  sql: string;
  params: readonly unknown[];
  row: Record<string, unknown>;
}

/** Records the events in order: at once where the recorder can, else one after the other. */
export async function recordAll(
  recorder: EventRecorder,
  tx: Tx,
  events: NewEvent[],
): Promise<Event[]> {
  if (events.length === 0) return [];
  if (recorder.recordMany) return recorder.recordMany({ tx }, events);
  const out: Event[] = [];
  for (const e of events) out.push(await recorder.record({ tx }, e));
  return out;
}

/** A recorder that records nothing (services built without events, e.g. in unit tests). */
export const noEvents: EventRecorder = {
  async record(_tx, e) {
    return {
      id: 0,
      accountId: e.accountId,
      type: e.type,
      version: '',
      data: e.data,
      createdAt: '',
    };
  },
};
