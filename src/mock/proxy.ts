// The mock's validation proxy (`npm run mock -- --proxy URL`), as Prism's proxy: every request is
// forwarded unchanged to a live server, and its answer is passed back with the contract's verdict:
// when the request (request-check.ts) or the answer (conformance.ts) breaks the contract, an
// `X-Contract-Violations` header (a JSON array of the problems, the request's first) and one JSON
// log line. A bad request is still forwarded: what the server answers to it is checked too. JSON bodies are read whole to be checked; anything else
// (event streams) streams through with its status and content type checked.
import http from 'node:http';
import { Readable } from 'node:stream';
import { OpenAPIRouter } from 'openapi-backend';
import { STREAMED, conformance } from './conformance.ts';
import { requestConformance } from './request-check.ts';
import { listen } from '../http/listen.ts';
import { newRequestId } from '../domain/shared/ids.ts';

export const VIOLATIONS_HEADER = 'X-Contract-Violations';
// Hop-by-hop headers, and what fetch undoes on its own (it decompresses, so it must not be asked
// to: the bytes passed back would not match a Content-Encoding).
const NOT_FORWARDED = new Set([
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'accept-encoding',
  'upgrade',
  'proxy-connection',
]);
const NOT_RETURNED = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'content-encoding',
]);

/** A header value of printable ASCII: JSON with anything else escaped. */
const asciiJson = (value: unknown) =>
  JSON.stringify(value).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );

export interface ProxyOptions {
  apiRoot: string;
  /** Where violation lines go (default: stdout). */
  log?: (line: string) => void;
}

export function createProxy(spec: any, target: string, options: ProxyOptions) {
  const origin = target.replace(/\/+$/, '').replace(new RegExp(`${options.apiRoot}$`), '');
  const check = conformance(spec, options.apiRoot);
  const checkRequest = requestConformance(spec, options.apiRoot);
  const log = options.log ?? ((line: string) => console.log(line));

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const asked = checkRequest(req.method!, url, req.headers, Buffer.concat(chunks));
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (NOT_FORWARDED.has(name) || value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    const aborted = new AbortController();
    res.once('close', () => aborted.abort());
    let upstream: Response;
    try {
      upstream = await fetch(origin + url.pathname + url.search, {
        method: req.method,
        headers,
        body: chunks.length ? Buffer.concat(chunks) : undefined,
        redirect: 'manual',
        signal: aborted.signal,
      });
    } catch (err) {
      if (aborted.signal.aborted) return;
      log(JSON.stringify({ proxy_error: { target: origin, message: (err as Error).message } }));
      res.writeHead(502, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          error: {
            code: 'bad_gateway',
            message: `${origin} did not answer`,
            request_id: '',
            details: [],
          },
        }),
      );
      return;
    }
    const type = upstream.headers.get('content-type');
    const out: Record<string, string | string[]> = {};
    upstream.headers.forEach((value, name) => {
      if (!NOT_RETURNED.has(name) && name !== 'set-cookie') out[name] = value;
    });
    const cookies = upstream.headers.getSetCookie();
    if (cookies.length) out['set-cookie'] = cookies;
    const json = /^application\/(.+\+)?json\s*(;|$)/i.test(type ?? '');
    let text: string | undefined;
    let body: unknown;
    if (json || !upstream.body) {
      text = await upstream.text();
      if (text !== '') {
        try {
          body = JSON.parse(text);
        } catch {
          body = text; // reported: "body is not JSON"
        }
      }
    } else {
      body = STREAMED;
    }
    const problems = [...asked, ...check(req.method!, url.pathname, upstream.status, type, body)];
    if (problems.length) {
      out[VIOLATIONS_HEADER] = asciiJson(problems);
      log(
        JSON.stringify({
          contract_violation: {
            method: req.method,
            path: url.pathname,
            status: upstream.status,
            request_id: upstream.headers.get('x-request-id'),
            violations: problems,
          },
        }),
      );
    }
    res.writeHead(upstream.status, out);
    if (text !== undefined) return void res.end(text);
    Readable.fromWeb(upstream.body as any)
      .on('error', () => res.destroy())
      .pipe(res);
  });

  return {
    server,
    target: origin,
    operations: new OpenAPIRouter({ definition: spec, apiRoot: options.apiRoot }).getOperations()
      .length,
    release: String(spec.info?.version ?? ''),
    async listen(port: number, host = '127.0.0.1'): Promise<number> {
      await listen(server, port, host);
      return (server.address() as { port: number }).port;
    },
    async close(): Promise<void> {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
