// Events (as recorded) and the event catalog.
import type { components } from '../../../../generated/types.ts';
import type { EventsService } from '../../../domain/events/service.ts';
import { eventEnvelope, type Event } from '../../../domain/events/types.ts';
import { fromId } from '../../../domain/shared/ids.ts';
import type { Handlers } from './types.ts';

type S = components['schemas'];

export const presentEvent = (e: Event): S['Event'] => eventEnvelope(e);

export function eventHandlers(
  events: EventsService,
): Pick<Handlers, 'listEvents' | 'getEvent' | 'listEventTypes'> {
  return {
    async listEvents({ auth, query }) {
      const { rows, page } = await events.list(auth.account.id, query);
      return { status: 200, body: { data: rows.map(presentEvent), page } };
    },
    async getEvent({ auth, params }) {
      const e = await events.get(auth.account.id, fromId(params.event_id));
      return { status: 200, body: { data: presentEvent(e) } };
    },
    async listEventTypes({ query }) {
      const entries = events.catalog.entries.filter((e) => !query.type || e.type === query.type);
      const data = entries.map((e) => ({
        object: 'event_type' as const,
        type: e.type,
        version: e.version,
        current: events.catalog.currentOf(e.type) === e,
        visibility: e.visibility,
        description: e.description,
        payload_keys: e.payloadKeys,
        schema: e.schema,
      }));
      return { status: 200, body: { data } };
    },
  };
}
