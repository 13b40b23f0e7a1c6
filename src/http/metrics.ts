// Request metrics, and the listener that serves them. The label of a request is its v3
// operationId, its legacy or OAuth route, or `unmatched`: never the raw path, which a client could
// make unbounded.
import http from 'node:http';
import type { Middleware } from 'koa';
import type { Metrics } from '../metrics.ts';

export function requestMetrics(metrics: Metrics): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const operation: string =
        ctx.state.operationId ?? ctx.state.route ?? ctx._matchedRoute ?? 'unmatched';
      const method = ctx.method;
      metrics.requests.inc({ method, operation, status: ctx.status });
      metrics.duration.observe({ method, operation }, (performance.now() - started) / 1000);
      if (ctx.response.get('Idempotent-Replayed') === 'true')
        metrics.idempotentReplays.inc({ operation });
    }
  };
}

export interface MetricsListener {
  port: number;
  close(): Promise<void>;
}

/** GET /metrics on host:port (0 picks a free port), in Prometheus' text format. */
export async function serveMetrics(
  metrics: Metrics,
  port: number,
  host: string,
): Promise<MetricsListener> {
  metrics.collectDefaults();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
