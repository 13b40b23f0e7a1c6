// `npm run school -- events listen [--types a,b] [--forward-to URL]`: follows an event stream of
// the credential (reusing a free one with the same types, else creating one), prints one line per
// event (id, type, created_at) and, with --forward-to, posts each event to that URL signed like a
// webhook (Standard Webhooks, with a local `whsec_` secret printed at start). A dropped connection
// is reopened from the last event received (Last-Event-ID), so nothing is printed twice or lost.
import crypto from 'node:crypto';
import { newSigningSecret, signedHeaders } from '../../domain/webhooks/signature.ts';
import type { Io } from './io.ts';
import { SseParser, type SseEvent } from './sse.ts';
import { unreachableMessage } from './reach.ts';

export interface ListenOptions {
  baseUrl: string;
  /** Headers of an authenticated call (autonomous or human mode). */
  headers: () => Promise<Record<string, string>>;
  io: Io;
  types?: string[];
  forwardTo?: string;
  /** A `whsec_` secret to sign forwarded events with (default: a new one, printed). */
  secret?: string;
  /** Follow this stream instead of finding or creating one. */
  streamId?: string;
  /** Wait before reconnecting (default: the server's `retry:`, 3 s). */
  retryMs?: number;
  signal?: AbortSignal;
}

class Stop extends Error {}

/** fetch says only "fetch failed"; the cause says why (ECONNREFUSED, ECONNRESET...). */
const why = (err: unknown) => {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  return e.cause?.code ?? e.cause?.message ?? e.message;
};

const sameTypes = (a: string[] | null, b: string[] | undefined) =>
  JSON.stringify(a ? [...a].sort() : null) === JSON.stringify(b ? [...b].sort() : null);

export async function listen(o: ListenOptions): Promise<number> {
  const api = `${o.baseUrl}/api/v3`;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(api + path, {
      method,
      signal: o.signal,
      headers: {
        accept: 'application/json',
        ...(await o.headers()),
        ...(body === undefined
          ? {}
          : { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json().catch(() => null)) as any;
    if (!res.ok)
      throw new Error(`${json?.error?.code ?? res.status}: ${json?.error?.message ?? ''}`.trim());
    return json;
  };

  try {
    const streamId = o.streamId ?? (await findOrCreate(call, o.types));
    const secret = o.forwardTo ? (o.secret ?? newSigningSecret()) : undefined;
    o.io.err(`Listening on event stream ${streamId} (${o.types?.join(', ') ?? 'every type'}).`);
    if (o.forwardTo) o.io.err(`Forwarding to ${o.forwardTo}; webhook signing secret: ${secret}`);
    await follow(o, streamId, secret);
    return 0;
  } catch (err) {
    if (err instanceof Stop || o.signal?.aborted) return 0;
    o.io.err(`error: ${unreachableMessage(err, o.baseUrl) ?? why(err)}`);
    return 1;
  }
}

/** A stream of this credential with the same types and no open connection, else a new one. */
async function findOrCreate(
  call: (method: string, path: string, body?: unknown) => Promise<any>,
  types: string[] | undefined,
): Promise<string> {
  const me = (await call('GET', '/credentials/current')).data.id;
  const streams = (await call('GET', '/event-streams')).data as any[];
  const free = streams.find(
    (s) => s.credential_id === me && !s.connected && sameTypes(s.types, types),
  );
  if (free) return free.id;
  return (await call('POST', '/event-streams', types ? { types } : {})).data.id;
}

async function follow(o: ListenOptions, streamId: string, secret: string | undefined) {
  let lastId: string | undefined;
  let retryMs = o.retryMs ?? 3000;
  const url = `${o.baseUrl}/api/v3/event-streams/${encodeURIComponent(streamId)}/events`;
  for (;;) {
    if (o.signal?.aborted) throw new Stop();
    let res: Response;
    try {
      res = await fetch(url, {
        signal: o.signal,
        headers: {
          accept: 'text/event-stream',
          ...(await o.headers()),
          ...(lastId ? { 'last-event-id': lastId } : {}),
        },
      });
    } catch (err) {
      if (o.signal?.aborted) throw new Stop();
      o.io.err(`Connection failed (${why(err)}); retrying.`);
      await pause(retryMs, o.signal);
      continue;
    }
    if (!res.ok) {
      const json = (await res.json().catch(() => null)) as any;
      const code = json?.error?.code ?? String(res.status);
      // Busy: our previous connection may not be released yet. 5xx: the server is in trouble.
      if (code === 'stream_busy' || res.status >= 500) {
        o.io.err(`Stream unavailable (${code}); retrying.`);
        await pause(retryMs, o.signal);
        continue;
      }
      throw new Error(`${code}: ${json?.error?.message ?? res.statusText}`);
    }
    const queue: SseEvent[] = [];
    const parser = new SseParser({
      event: (e) => queue.push(e),
      retry: (ms) => (retryMs = o.retryMs ?? ms),
    });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        parser.feed(decoder.decode(chunk, { stream: true }));
        // In order, one at a time: the next event waits until this one is forwarded.
        while (queue.length) {
          const e = queue.shift()!;
          await handle(o, e, secret);
          lastId = e.id ?? lastId;
        }
      }
    } catch (err) {
      if (o.signal?.aborted) throw new Stop();
      o.io.err(`Connection lost (${why(err)}).`);
    }
    o.io.err(`Reconnecting${lastId ? ` after event ${lastId}` : ''}.`);
    await pause(retryMs, o.signal);
  }
}

async function handle(o: ListenOptions, e: SseEvent, secret: string | undefined) {
  let line = e.id ?? '-';
  let created = '';
  try {
    created = (JSON.parse(e.data) as { created_at?: string }).created_at ?? '';
  } catch {
    // Not JSON: still shown, by id and type.
  }
  line += `  ${e.event}  ${created}`;
  if (o.forwardTo && secret) {
    try {
      const res = await fetch(o.forwardTo, {
        method: 'POST',
        signal: o.signal,
        headers: {
          'content-type': 'application/json',
          // The message id a webhook of this event carries, so receivers deduplicate alike.
          ...signedHeaders([secret], `evt_${e.id}`, Math.floor(Date.now() / 1000), e.data),
        },
        body: e.data,
      });
      line += `  -> ${res.status}`;
      await res.body?.cancel();
    } catch (err) {
      if (o.signal?.aborted) throw new Stop();
      line += `  -> failed (${why(err)})`;
    }
  }
  o.io.out(line);
}

const pause = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
