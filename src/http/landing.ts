// `GET /` on the root host: where a newcomer who opens the server's address lands. It points to
// the reference pages, the contracts and the health checks instead of a bare "Not Found".
import type { Middleware } from 'koa';

const LINKS = {
  docs: '/docs',
  // The same document as /api/v3/openapi.json, which needs a credential.
  openapi: '/docs/v3/openapi.json',
  legacy_docs: { v1: '/docs/v1', v2: '/docs/v2' },
  oauth_metadata: '/.well-known/oauth-authorization-server',
  health: '/healthz',
  ready: '/readyz',
};

function html(release: string): string {
  const item = (href: string, text: string) => `<li><a href="${href}">${text}</a></li>`;
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>School Platform API</title></head>
<body>
<h1>School Platform API</h1>
<p>Release ${release}. The v3 API is under <code>/api/v3</code> (a credential secret as a bearer
token); the legacy generations under <code>/api/v2</code>, <code>/api/third</code> and
<code>/api/v1</code>.</p>
<ul>
${item(LINKS.docs, 'API reference (v3)')}
${item(LINKS.openapi, 'OpenAPI document (v3)')}
${item(LINKS.legacy_docs.v1, 'v1 reference')}
${item(LINKS.legacy_docs.v2, 'v2 reference')}
${item(LINKS.health, 'Liveness')} ${item(LINKS.ready, 'Readiness')}
</ul>
</body>
</html>
`;
}

export function landingRoute(release: string): Middleware {
  const page = html(release);
  const json = JSON.stringify({ name: 'School Platform API', release, links: LINKS });
  return async function landing(ctx, next) {
    if (ctx.path !== '/') return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      ctx.status = 405;
      return;
    }
    ctx.set('Cache-Control', 'no-cache');
    if (ctx.accepts('html', 'json') === 'html') {
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = page;
    } else {
      ctx.type = 'application/json';
      ctx.body = json;
    }
  };
}
