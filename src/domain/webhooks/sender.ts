// One HTTP attempt of a webhook delivery. The name is resolved here, each address checked, and the
// connection made to the checked address (with the original Host header and TLS server name), so
// the address checked is the address reached. Redirects are not followed; success is a 2xx within
// the timeout; the response excerpt keeps at most 1 KiB, with anything that looks like a secret
// or token masked.
import dns from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Clock } from '../../clock.ts';
import { hostOf, isPrivateAddress } from './targets.ts';
import { withoutNul } from '../shared/text.ts';

export const TIMEOUT_MS = 15_000;
export const EXCERPT_BYTES = 1024;
/** Read a little more than is kept, so a secret cut by the 1 KiB limit is still recognized. */
const READ_BYTES = 4096;

export interface SendResult {
  httpStatus: number | null;
  durationMs: number;
  startedAt: string;
  finishedAt: string;
  responseExcerpt: string | null;
  transportError: string | null;
}

export type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;

const MASK = '[masked]';
const SECRET_KEYS =
  '(?:secret|token|password|passwd|pwd|api[_-]?key|apikey|authorization|signature|access[_-]?key|private[_-]?key|session|cookie|credential)';

/** Masks values that look like secrets or tokens: known prefixes, bearer values, JWTs, key=value. */
export function maskSecrets(text: string): string {
  return (
    text
      .replace(/\b(whsec|sch_live|sch_test|sk_live|sk_test)_[A-Za-z0-9+/=_-]+/g, `$1_${MASK}`)
      .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, `$1 ${MASK}`)
      .replace(/\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*)?/g, MASK)
      // "api_key": "value" (also cut short at the end of the excerpt)
      .replace(
        new RegExp(`("[^"]*${SECRET_KEYS}[^"]*"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*("|$)`, 'gi'),
        `$1"${MASK}$2`,
      )
      // api_key=value, token: value
      .replace(
        new RegExp(
          `(\\b[\\w-]*${SECRET_KEYS}[\\w-]*\\s*[=:]\\s*)(?!"|\\[masked\\])[^\\s&,;"'<]+`,
          'gi',
        ),
        `$1${MASK}`,
      )
      // Long runs of letters and digits (hex or base64 keys), when they mix both.
      .replace(/[A-Za-z0-9+/_=-]{32,}/g, (m) => (/\d/.test(m) && /[A-Za-z]/.test(m) ? MASK : m))
  );
}

/**
 * At most `EXCERPT_BYTES` of UTF-8, never ending in half a character, without NUL (withoutNul:
 * PostgreSQL's text refuses it, and the outcome would never be recorded).
 */
export function excerpt(raw: Buffer): string {
  const text = withoutNul(raw.toString('utf8'));
  const masked = Buffer.from(maskSecrets(text), 'utf8');
  if (masked.length <= EXCERPT_BYTES) return masked.toString('utf8');
  return masked
    .subarray(0, EXCERPT_BYTES)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
}

/** The attempt's transport error; a timeout names the sender's own (15 s but in tests). */
function describe(err: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return `timeout: no response within ${timeoutMs / 1000} s`;
  const e = err as NodeJS.ErrnoException;
  const text = `${e?.code ?? 'error'}: ${e?.message ?? String(err)}`;
  return text.slice(0, 500);
}

export class WebhookSender {
  /** Replaceable in tests (a name that resolves to an internal address). */
  lookup: Lookup = (host) => dns.lookup(host, { all: true, verbatim: true });
  private readonly httpAgent = keepAlive(new http.Agent({ keepAlive: true, maxFreeSockets: 16 }));
  private readonly httpsAgent = keepAlive(new https.Agent({ keepAlive: true, maxFreeSockets: 16 }));
  private readonly clock: Clock;
  private readonly allowPrivate: boolean;
  private readonly timeoutMs: number;

  constructor(clock: Clock, allowPrivate: boolean, timeoutMs: number = TIMEOUT_MS) {
    this.clock = clock;
    this.allowPrivate = allowPrivate;
    this.timeoutMs = timeoutMs;
  }

  async send(target: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    const startedAt = this.clock.now().toISOString();
    const done = (r: Partial<SendResult>): SendResult => ({
      httpStatus: null,
      responseExcerpt: null,
      transportError: null,
      ...r,
      durationMs: Math.round(performance.now() - started),
      startedAt,
      finishedAt: this.clock.now().toISOString(),
    });
    const url = new URL(target);
    const host = hostOf(url);
    // One message whether the name does not resolve or resolves to an address we refuse: telling
    // them apart would map internal host names for anyone who may register an endpoint.
    const unreachable = () => done({ transportError: `dns: ${host} has no public address` });
    let address: { address: string; family: number };
    try {
      const found = net.isIP(host)
        ? [{ address: host, family: net.isIP(host) }]
        : await this.lookup(host);
      if (found.length === 0) return unreachable();
      if (!this.allowPrivate && found.some((a) => isPrivateAddress(a.address)))
        return unreachable();
      address = found[0]!;
    } catch {
      return unreachable();
    }
    const deadline = { passed: false };
    try {
      const { status, raw } = await this.request(url, address, headers, body, deadline);
      return done({ httpStatus: status, responseExcerpt: raw.length ? excerpt(raw) : null });
    } catch (err) {
      return done({ transportError: describe(err, deadline.passed, this.timeoutMs) });
    }
  }

  private request(
    url: URL,
    to: { address: string; family: number },
    headers: Record<string, string>,
    body: string,
    /** Set when the timeout destroyed the request. */
    deadline: { passed: boolean },
  ): Promise<{ status: number; raw: Buffer }> {
    const secure = url.protocol === 'https:';
    const host = hostOf(url);
    return new Promise((resolve, reject) => {
      const req = (secure ? https : http).request({
        host: to.address,
        family: to.family,
        port: url.port || (secure ? 443 : 80),
        path: url.pathname + url.search,
        method: 'POST',
        // SNI and certificate checks use the name, the socket the checked address.
        servername: secure && !net.isIP(host) ? host : undefined,
        // Kept-alive connections are pooled by the address connected to (and, for https, the
        // server name): a connection is reused only for the address this attempt just checked.
        agent: secure ? this.httpsAgent : this.httpAgent,
        headers: {
          ...headers,
          host: url.host,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body, 'utf8')),
          'user-agent': 'SchoolPlatform-Webhooks/1',
        },
      });
      // No second try on a new connection when a reused one fails: the receiver may have read
      // and acted on the request before it reset (every send must be a recorded attempt). The
      // attempt fails and the retry schedule sends it again; idle connections close before the
      // receiver's own keep-alive timeout says it would close them (keepAlive below).
      // The timeout destroys the request as an AbortSignal given to http.request would (the
      // same events follow), for a plain timer's cost: AbortSignal.timeout and the listeners it
      // adds cost ~20-30 us of CPU per attempt.
      const timer = setTimeout(() => {
        deadline.passed = true;
        req.destroy(new Error('timeout'));
      }, this.timeoutMs).unref();
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let settled = false;
        const finish = (complete: boolean) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          // A response read to its end leaves the connection to the pool; one cut short closes it.
          if (!complete) res.destroy();
          resolve({ status: res.statusCode ?? 0, raw: Buffer.concat(chunks) });
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= READ_BYTES) finish(false);
        });
        res.on('end', () => finish(true));
        res.on('error', () => finish(false));
      });
      // As a string: Node writes it with the headers in one piece (a Buffer goes out beside them
      // in a writev), ~10-15 us of CPU less per attempt; the same UTF-8 bytes.
      req.end(body, 'utf8');
    });
  }

  /** Closes the pooled connections (shutdown, tests). */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/** Idle kept-alive connections close after this (below Node's 5 s server default). */
export const IDLE_MS = 4000;

/**
 * How long a connection may stay idle for the receiver that answered on it: IDLE_MS, or a second
 * less than its `Keep-Alive: timeout=N` when that is shorter (0: do not keep it). Node applies the
 * hint only below an agent-wide socket timeout, which would also time active requests.
 */
export function idleMs(keepAliveHeader: string | string[] | undefined): number {
  const hint = /^\s*timeout=(\d+)/i.exec(String(keepAliveHeader ?? ''))?.[1];
  if (hint === undefined) return IDLE_MS;
  return Math.max(0, Math.min(IDLE_MS, Number(hint) * 1000 - 1000));
}

/**
 * Keeps connections alive between attempts and closes idle ones after idleMs. At most one
 * connection per attempt under way, which the per-endpoint limit bounds.
 */
function keepAlive<T extends http.Agent>(agent: T): T {
  // Typed as returning nothing; Node's returns whether the connection may be kept.
  const a = agent as unknown as { keepSocketAlive(socket: net.Socket): boolean };
  const keep = a.keepSocketAlive.bind(agent);
  a.keepSocketAlive = (socket) => {
    if (!keep(socket)) return false;
    const res = (socket as unknown as { _httpMessage?: { res?: http.IncomingMessage } })
      ._httpMessage?.res;
    const ms = idleMs(res?.headers['keep-alive']);
    if (ms === 0) return false;
    socket.setTimeout(ms);
    return true;
  };
  return agent;
}
