// The Server-Sent Events wire format of an event stream: each message a connection sends
// (src/domain/streams/connection.ts) becomes its text. An event carries its id (the client's
// Last-Event-ID on reconnecting), its type and its envelope; opening, heartbeats and the reason
// for closing are comments, which an EventSource ignores.
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { eventEnvelope } from '../../domain/events/types.ts';
import type { StreamMessage } from '../../domain/streams/connection.ts';

export function sseText(m: StreamMessage): string {
  switch (m.kind) {
    case 'open':
      return `retry: ${m.retryMs}\n: stream ${m.streamId} open\n\n`;
    case 'event': {
      const e = m.event;
      return `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(eventEnvelope(e))}\n\n`;
    }
    case 'heartbeat':
      return ': heartbeat\n\n';
    case 'closed':
      return `: closed: ${m.reason}\n\n`;
  }
}

/**
 * The response body for a connection's messages. Destroying it (the client went away) destroys
 * the messages too, which ends the connection and frees its lease.
 */
export function sseBody(messages: Readable): Readable {
  const text = new Transform({
    writableObjectMode: true,
    transform(m: StreamMessage, _encoding, done) {
      done(null, sseText(m));
    },
  });
  pipeline(messages, text).catch(() => undefined);
  return text;
}
