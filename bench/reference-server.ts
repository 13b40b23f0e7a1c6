// What the bench's reference servers (scripts/bench-reference*.ts) share: the POST /users body they
// accept and how they listen and stop. Bare on purpose: Koa and node:http, nothing of the app.
import http from 'node:http';
import type Koa from 'koa';
import type { Context } from 'koa';
import { serveControl } from './child-control.ts';

export interface UserPost {
  name: string;
  email: string;
  /** The Idempotency-Key header ('' when absent and not required). */
  key: string;
  /** The body as sent. */
  raw: string;
}

/** POST /users' `{"name","email"}` (and its Idempotency-Key when `needsKey`); null after a 400. */
export async function userPost(ctx: Context, needsKey = false): Promise<UserPost | null> {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  let body: { name?: unknown; email?: unknown } | undefined;
  try {
    body = JSON.parse(raw);
  } catch {
    body = undefined;
  }
  const key = ctx.get('idempotency-key');
  if (typeof body?.name !== 'string' || typeof body.email !== 'string' || (needsKey && !key)) {
    ctx.status = 400;
    ctx.body = { error: { code: 'invalid_request' } };
    return null;
  }
  return { name: body.name, email: body.email, key, raw };
}

/**
 * Listens on 127.0.0.1 (a random port), prints `BENCH_READY {"port","userId"}`, then takes
 * bench/child-control.ts's commands; on stop, closes the connections, then `close`, then exits
 * normally (so `node --cpu-prof` writes its profile).
 */
export async function serveReference(
  koa: Koa,
  userId: number,
  close: () => Promise<void> | void,
): Promise<void> {
  const server = http.createServer(koa.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  process.stdout.write(`BENCH_READY ${JSON.stringify({ port, userId })}\n`);
  let stopping = false;
  serveControl(() => {
    if (stopping) return;
    stopping = true;
    server.close(() => {
      void Promise.resolve()
        .then(close)
        .finally(() => process.exit(0));
    });
    server.closeAllConnections();
  });
}
