// One message for "the server is not there", whichever layer noticed (fetch says "fetch failed",
// oauth4webapi wraps it, the cause says ECONNREFUSED): it names the URL and how to change it.
const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);

/** The network error code somewhere in err's cause chain, if it is one. */
function networkCode(err: unknown): string | undefined {
  for (let e = err as any, depth = 0; e && depth < 5; e = e.cause, depth++) {
    if (typeof e.code === 'string' && NETWORK.has(e.code)) return e.code;
    if (e instanceof TypeError && e.message === 'fetch failed' && !e.cause) return 'fetch failed';
  }
  return undefined;
}

export function unreachableMessage(err: unknown, baseUrl: string): string | undefined {
  const code = networkCode(err);
  if (!code) return undefined;
  return (
    `cannot reach the server at ${baseUrl} (${code}): is it running? ` +
    'Set --base-url or SCHOOL_BASE_URL to its address'
  );
}
