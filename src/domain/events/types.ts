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

export interface NewEvent {
  accountId: number;
  type: string;
  data: Record<string, unknown>;
}

/** Records an event in the caller's transaction: it exists if and only if the change commits. */
export interface EventRecorder {
  record(tx: Tx, event: NewEvent): Promise<Event>;
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
