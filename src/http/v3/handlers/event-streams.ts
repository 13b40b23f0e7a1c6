// Event streams: create, list, read, delete, and follow one as Server-Sent Events.
import type { components } from '../../../../generated/types.ts';
import type { EventStream } from '../../../domain/streams/repo.ts';
import type { StreamsService } from '../../../domain/streams/service.ts';
import { fromId, toId } from '../../../domain/shared/ids.ts';
import type { Handlers } from './types.ts';

type EventStreamOut = components['schemas']['EventStream'];

export type EventStreamOps =
  | 'listEventStreams'
  | 'createEventStream'
  | 'getEventStream'
  | 'deleteEventStream'
  | 'streamEvents';

export function eventStreamHandlers(s: StreamsService): Pick<Handlers, EventStreamOps> {
  const present = (e: EventStream): EventStreamOut => ({
    object: 'event_stream',
    id: toId(e.id)!,
    credential_id: toId(e.credentialId)!,
    types: e.types,
    events_url: `/api/v3/event-streams/${e.id}/events`,
    connected: s.isConnected(e),
    last_event_id: e.position > 0 ? toId(e.position) : null,
    last_connected_at: e.lastConnectedAt,
    created_at: e.createdAt,
  });
  return {
    async listEventStreams({ auth }) {
      return { status: 200, body: { data: (await s.list(auth.account.id)).map(present) } };
    },
    async createEventStream({ auth, body, tx }) {
      return { status: 201, body: { data: present(await s.create(auth, body, { tx })) } };
    },
    async getEventStream({ auth, params }) {
      const e = await s.get(auth.account.id, fromId(params.stream_id));
      return { status: 200, body: { data: present(e) } };
    },
    async deleteEventStream({ auth, params, tx }) {
      await s.remove(auth.account.id, fromId(params.stream_id), { tx });
      return { status: 204 };
    },
    async streamEvents({ auth, params, query, lastEventId }) {
      const c = await s.connect(auth, fromId(params.stream_id), {
        lastEventId,
        cursor: query.cursor,
        heartbeatSeconds: query.heartbeat_seconds,
      });
      // No proxy may buffer or cache it: each event must reach the client as it is written.
      const headers = { 'Cache-Control': 'no-cache, no-transform', 'X-Accel-Buffering': 'no' };
      return { status: 200, headers, stream: c.readable };
    },
  };
}
