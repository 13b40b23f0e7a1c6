// `school logs tail`: follows the account's audit trail live, as `stripe logs tail` does: one line
// per request (time, status, method, path, duration, request id, operation), oldest first, from
// the moment it starts. GET /requests has no stream, so the trail is polled: each poll asks for
// what was recorded `since` the newest entry already printed and walks its pages until it meets
// entries it has seen. The tail's own calls are in the trail too; it knows their request ids
// (X-Request-Id) and leaves them out.
import type { V3Client, components } from '../../client/index.ts';
import type { Io } from './io.ts';
import { UsageError } from './imports.ts';

type Entry = components['schemas']['RequestEntry'];

export const STATUS_FILTER = /^[1-5]([0-9]{2}|xx)$/;

export interface TailOptions {
  client: V3Client;
  io: Io;
  /** `4xx` or `404`: only those answers. */
  status?: string;
  /** Start from this instant instead of now (entries already recorded since then are printed). */
  since?: string;
  /** Between polls (SCHOOL_POLL_MS); 2 s by default. */
  intervalMs?: number;
  signal: AbortSignal;
}

export const formatEntry = (e: Entry): string =>
  [
    e.created_at,
    String(e.status),
    e.method.padEnd(6),
    e.path,
    `${e.duration_ms}ms`,
    e.id,
    e.operation_id ?? '-',
  ].join('  ');

export async function tail(o: TailOptions): Promise<number> {
  const status = o.status?.toLowerCase();
  if (status !== undefined && !STATUS_FILTER.test(status))
    throw new UsageError(`--status: '${o.status}' is not a status (404) or a class (4xx)`);
  if (o.since !== undefined && Number.isNaN(Date.parse(o.since)))
    throw new UsageError(`--since: '${o.since}' is not an instant (2026-01-31T12:00:00Z)`);
  // The tail's own requests, and what it printed at the newest instant (a poll asks again from
  // that instant, inclusive): both stay small, pruned as the tail moves on.
  const own = new Set<string>();
  const seen = new Map<string, string>();
  /** Every entry recorded since `since`, newest first, down to the first one already seen. */
  const fetchSince = async (since: string | undefined, limit: number): Promise<Entry[] | null> => {
    const out: Entry[] = [];
    let cursor: string | undefined;
    do {
      const query = { limit, ...(since ? { since } : {}), ...(status ? { status } : {}) };
      const { data, error, response } = await o.client.GET('/requests', {
        params: { query: cursor ? { ...query, cursor } : query },
        signal: o.signal,
      });
      const requestId = response.headers.get('x-request-id');
      if (requestId) own.add(requestId);
      if (own.size > 10_000) own.delete(own.values().next().value!);
      if (!data) {
        o.io.err(`error: ${error?.error?.code ?? response.status}: ${error?.error?.message ?? ''}`);
        return null;
      }
      const fresh = data.data.filter((e) => !seen.has(e.id));
      out.push(...fresh);
      // A page holding something already seen reaches back to what was printed: stop there.
      if (fresh.length < data.data.length || limit === 1) break;
      cursor = data.page.next_cursor ?? undefined;
    } while (cursor);
    return out;
  };

  let since = o.since;
  if (since === undefined) {
    // From now on: the newest entry marks where the trail stood; it and its instant's peers are
    // not printed.
    const newest = await fetchSince(undefined, 1);
    if (newest === null) return 1;
    since = newest[0]?.created_at;
    if (since) for (const e of (await fetchSince(since, 200)) ?? []) seen.set(e.id, e.created_at);
  }
  o.io.err(`Following the audit trail${status ? ` (status ${status})` : ''}; Ctrl-C stops.`);
  while (!o.signal.aborted) {
    let entries: Entry[] | null;
    try {
      entries = await fetchSince(since, 100);
    } catch (err) {
      if (o.signal.aborted) break;
      throw err;
    }
    if (entries === null) return 1;
    for (const e of entries.reverse()) {
      seen.set(e.id, e.created_at);
      if (!own.delete(e.id)) o.io.out(formatEntry(e));
      if (!since || e.created_at > since) since = e.created_at;
    }
    for (const [id, at] of seen) if (since && at < since) seen.delete(id);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, o.intervalMs ?? 2_000);
      o.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  }
  return 0;
}
