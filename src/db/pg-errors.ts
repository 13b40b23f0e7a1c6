// Errors that say the connection to PostgreSQL, or the server itself, went away, not that the
// statement was wrong: a restart, a failover, a network cut. The request path answers them with
// 503 (retry later), the job queue retries them until the server is back.

/** SQLSTATE classes and codes: 08 connection exception; 57P01-57P03 the server shutting down. */
const CODES = new Set(['57P01', '57P02', '57P03']);
const NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
/** What pg says, with no code, when the socket closed under a client. */
const MESSAGES = [
  'Connection terminated',
  'is not queryable',
  'Connection ended',
  'timeout exceeded when trying to connect',
];

export function isConnectionLoss(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; message?: unknown; name?: unknown; cause?: unknown };
  if (typeof e.code === 'string') {
    if (CODES.has(e.code) || e.code.startsWith('08') || NODE_CODES.has(e.code)) return true;
  }
  // knex: no connection could be had from the pool in time (the server does not answer).
  if (e.name === 'KnexTimeoutError') return true;
  const message = typeof e.message === 'string' ? e.message : '';
  if (MESSAGES.some((m) => message.includes(m))) return true;
  // AggregateError (every address refused) and wrapped causes.
  const inner = (err as { errors?: unknown[] }).errors;
  if (Array.isArray(inner) && inner.length && inner.every(isConnectionLoss)) return true;
  return e.cause !== undefined && e.cause !== err && isConnectionLoss(e.cause);
}

/**
 * Runs `fn` again while it fails for want of the database (after 250 ms, doubling up to 5 s), for
 * at most `maxMs` or until `stop()` says so; any other error, or the last one, is thrown. For
 * writes that must land once the server is back (an outcome already acted on) rather than be
 * redone from scratch later.
 */
export async function whileAway<T>(
  fn: () => Promise<T>,
  options: { maxMs: number; stop?: () => boolean },
): Promise<T> {
  const deadline = Date.now() + options.maxMs;
  for (let delay = 250; ; delay = Math.min(delay * 2, 5_000)) {
    try {
      return await fn();
    } catch (err) {
      if (!isConnectionLoss(err) || Date.now() + delay > deadline || options.stop?.()) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
