// Retries of one request, under the client: 429 and 503 (after Retry-After when the server says,
// else exponential backoff with jitter), 409 idempotency_in_progress (the first attempt is still
// running on the server) and network errors. Only requests that are safe to send twice: an
// idempotent method, or one carrying an Idempotency-Key, which every retry sends unchanged (the
// same Request is cloned), so the server runs the call once and replays its answer.

export interface RetryOptions {
  /** Retries after the first attempt (default 2; 0 turns retrying off). */
  retries?: number;
  /** First backoff in milliseconds, doubled on every retry (default 500). */
  retryDelay?: number;
  /** Longest wait in milliseconds; a longer Retry-After is answered, not waited for (default 30 s). */
  maxRetryDelay?: number;
}

type Transport = (request: Request) => Promise<Response>;
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

export const mayRetry = (request: Request): boolean =>
  IDEMPOTENT.has(request.method) || request.headers.has('idempotency-key');

/** Milliseconds asked by Retry-After (seconds or an HTTP date), if it says. */
export function retryAfterMs(response: Response, now = Date.now()): number | undefined {
  const value = response.headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

async function worthRetrying(response: Response): Promise<boolean> {
  if (response.status === 429 || response.status === 503) return true;
  if (response.status !== 409) return false;
  const body = await response
    .clone()
    .json()
    .catch(() => undefined);
  return body?.error?.code === 'idempotency_in_progress';
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const done = () => {
      signal.removeEventListener('abort', abort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', abort, { once: true });
  });
}

export function retrying(transport: Transport, options: RetryOptions = {}): Transport {
  const retries = options.retries ?? 2;
  const base = options.retryDelay ?? 500;
  const max = options.maxRetryDelay ?? 30_000;
  // Full jitter over half the step: clients that failed together do not retry together.
  const backoff = (attempt: number) =>
    Math.min(max, base * 2 ** attempt) * (0.5 + Math.random() / 2);
  return async (request) => {
    const safe = mayRetry(request);
    for (let attempt = 0; ; attempt++) {
      const last = !safe || attempt >= retries;
      let response: Response;
      try {
        // A clone per attempt: a body can be read once, and the original stays for the last.
        response = await transport(last ? request : request.clone());
      } catch (err) {
        // fetch reports network failures as TypeError; an abort is the caller's wish.
        if (last || request.signal.aborted || !(err instanceof TypeError)) throw err;
        await sleep(backoff(attempt), request.signal);
        continue;
      }
      if (last || !(await worthRetrying(response))) return response;
      const wait = retryAfterMs(response) ?? backoff(attempt);
      if (wait > max) return response;
      await response.body?.cancel();
      await sleep(wait, request.signal);
    }
  };
}
