// A webhook receiver on 127.0.0.1 for tests: records every request (headers and raw body) and
// answers what the test says (a status, a body, or nothing for a while).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Answer {
  status: number;
  body?: string;
  /** Holds the answer this long (a slow endpoint). */
  delayMs?: number;
}

/** What to answer; a promise holds the answer until it settles (a slow endpoint). */
export type Responder = (req: Received, count: number) => Answer | Promise<Answer>;

export interface Receiver {
  url: string;
  received: Received[];
  respond(r: Responder): void;
  /** Polls (every 10 ms, at most `timeoutMs`) until `n` requests have arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(
  responder: Responder = () => ({ status: 200 }),
): Promise<Receiver> {
  let respond = responder;
  const received: Received[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(r);
      void Promise.resolve(respond(r, received.length)).then((answer) => {
        const send = () => {
          if (res.destroyed) return;
          res.writeHead(answer.status, { 'content-type': 'text/plain' });
          res.end(answer.body ?? '');
        };
        if (!answer.delayMs) return send();
        const t = setTimeout(() => {
          timers.delete(t);
          send();
        }, answer.delayMs);
        timers.add(t);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    respond(r) {
      respond = r;
    },
    async waitFor(n, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < n) {
        if (Date.now() > deadline)
          throw new Error(`receiver: ${received.length} requests, expected ${n}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return received;
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
