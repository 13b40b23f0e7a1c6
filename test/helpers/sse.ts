// A small Server-Sent Events client over node:http for tests: connects, collects events and
// comment lines as they arrive, and waits for conditions on them (never on time alone).
import { EventEmitter } from 'node:events';
import http from 'node:http';
import * as assert from 'uvu/assert';
import { SseParser, type SseEvent } from '../../src/cli/school/sse.ts';
import { newKey, type Booted } from './app.ts';

export interface SseConnection {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The JSON error of a refused connection. */
  body: any;
  events: SseEvent[];
  comments: string[];
  /** Event ids received, in order. */
  ids(): string[];
  /** Resolves once `pred` holds (checked as data arrives); rejects after `timeoutMs`. */
  until(pred: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Resolves when the server ends the stream (or the socket closes). */
  ended: Promise<void>;
  close(): void;
}

export function openStream(
  baseUrl: string,
  path: string,
  options: { secret?: string; headers?: Record<string, string> } = {},
): Promise<SseConnection> {
  const changed = new EventEmitter();
  changed.setMaxListeners(100);
  const events: SseEvent[] = [];
  const comments: string[] = [];
  let done = false;
  const headers: Record<string, string> = {
    accept: 'text/event-stream',
    ...(options.secret ? { authorization: `Bearer ${options.secret}` } : {}),
    ...options.headers,
  };
  return new Promise((resolve, reject) => {
    const req = http.get(baseUrl + path, { headers }, (res) => {
      res.setEncoding('utf8');
      const ended = new Promise<void>((r) =>
        res.once('close', () => {
          done = true;
          changed.emit('change');
          r();
        }),
      );
      const conn: SseConnection = {
        status: res.statusCode!,
        headers: res.headers,
        body: undefined,
        events,
        comments,
        ids: () => events.map((e) => e.id!),
        until(pred, what, timeoutMs = 10_000) {
          return new Promise((ok, fail) => {
            const check = () => {
              if (pred()) {
                cleanup();
                ok();
              } else if (done) {
                cleanup();
                fail(new Error(`stream ended before: ${what}`));
              }
            };
            const timer = setTimeout(() => {
              cleanup();
              fail(new Error(`timed out waiting for: ${what}`));
            }, timeoutMs);
            const cleanup = () => {
              clearTimeout(timer);
              changed.off('change', check);
            };
            changed.on('change', check);
            check();
          });
        },
        ended,
        close: () => req.destroy(),
      };
      if (res.statusCode !== 200) {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          conn.body = text ? JSON.parse(text) : undefined;
          resolve(conn);
        });
        return;
      }
      const parser = new SseParser({
        event: (e) => events.push(e),
        comment: (c) => comments.push(c),
      });
      res.on('data', (chunk: string) => {
        parser.feed(chunk);
        changed.emit('change');
      });
      res.on('error', () => undefined);
      resolve(conn);
    });
    req.on('error', reject);
  });
}

// --- event streams of a booted app ---

export async function createStream(b: Booted, body: object = {}, secret?: string) {
  const res = await b.api('POST', '/api/v3/event-streams', { body, key: newKey(), secret });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

let users = 0;
/** Records a `user.created` event through the API; returns its event id. */
export async function userCreated(b: Booted): Promise<string> {
  const n = ++users;
  const res = await b.api('POST', '/api/v3/users', {
    body: { name: `S ${n}`, email: `stream${n}-${process.pid}@example.com` },
    key: newKey(),
  });
  assert.is(res.status, 201);
  const page = await b.api('GET', '/api/v3/events?type=user.created&limit=1');
  assert.is(page.body.data[0].data.user.id, res.body.data.id);
  return page.body.data[0].id;
}

export const follow = (
  b: Booted,
  id: string,
  query = '',
  options: Parameters<typeof openStream>[2] = {},
) =>
  openStream(b.url, `/api/v3/event-streams/${id}/events${query}`, {
    secret: b.secret,
    ...options,
  });

/** The audit entry of a request, once written (a stream's is written when it ends). */
export async function auditEntry(b: Booted, requestId: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await b.api('GET', `/api/v3/requests/${requestId}`);
    if (res.status === 200) return res.body.data;
    if (Date.now() > deadline) throw new Error(`no audit entry for ${requestId}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Hangs up, and (given the stream) waits until the server has released it. */
export async function closed(c: SseConnection, b?: Booted, streamId?: string) {
  c.close();
  await c.ended;
  if (!b || !streamId) return;
  const deadline = Date.now() + 10_000;
  while ((await b.api('GET', `/api/v3/event-streams/${streamId}`)).body.data.connected) {
    if (Date.now() > deadline) throw new Error(`stream ${streamId} still connected`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
