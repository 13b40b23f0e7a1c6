// The API reference on the root host: GET /docs renders the v3 contract with Scalar's API
// reference, /docs/v1 and /docs/v2 the legacy contracts when spec/legacy/v1.yaml and v2.yaml
// exist. Everything the page loads is served from here (no CDN: the server may be offline), and
// the Content-Security-Policy holds the page to this origin. Outside /api/v3 and its audit.
import fs from 'node:fs';
import path from 'node:path';
import type { Middleware } from 'koa';
import { parse } from 'yaml';

const ROOT = path.resolve(import.meta.dirname, '../..');
// Scalar's browser bundle, committed under vendor/scalar/ (scripts/vendor.ts copies it from the
// development dependency): a production install does not install the package's tree.
const SCALAR = path.join(ROOT, 'vendor/scalar/standalone.js');
const SCALAR_VERSION = fs.readFileSync(path.join(ROOT, 'vendor/scalar/VERSION'), 'utf8').trim();

// Scalar injects its styles at run time and draws icons from data: URLs.
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/** Starts the reference from the mount element's data-url, with nothing fetched elsewhere. */
const INIT = `const mount = document.getElementById('reference');
Scalar.createApiReference(mount, {
  url: mount.dataset.url,
  withDefaultFonts: false,
  telemetry: false,
  showDeveloperTools: 'never',
  agent: { disabled: true },
  mcp: { disabled: true },
  documentDownloadType: 'json',
});
`;

const TITLES = { v3: 'v3', v2: 'v2 (legacy)', v1: 'v1 (legacy)' } as const;
type Version = keyof typeof TITLES;

function page(version: Version): string {
  const title = `School Platform API ${TITLES[version]} reference`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="data:,">
</head>
<body>
<div id="reference" data-url="/docs/${version}/openapi.json"></div>
<script src="/docs/assets/scalar.js?v=${SCALAR_VERSION}"></script>
<script src="/docs/assets/init.js?v=${SCALAR_VERSION}"></script>
</body>
</html>
`;
}

export interface DocsOptions {
  /** The v3 document the server serves at /api/v3/openapi.json. */
  spec: object;
  /** Where v1.yaml and v2.yaml are looked for (default spec/legacy). */
  legacyDir?: string;
}

export function docsRoutes(options: DocsOptions): Middleware {
  const v3 = JSON.stringify(options.spec);
  const legacyDir = options.legacyDir ?? path.join(ROOT, 'spec/legacy');
  // Legacy documents are read when asked for and kept until the file changes: they may appear
  // (or change) while the server runs.
  const cache = new Map<string, { mtimeMs: number; json: string }>();
  function legacy(version: 'v1' | 'v2'): string | undefined {
    const file = path.join(legacyDir, `${version}.yaml`);
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
    } catch {
      return undefined;
    }
    const hit = cache.get(file);
    if (hit?.mtimeMs === stat.mtimeMs) return hit.json;
    const json = JSON.stringify(parse(fs.readFileSync(file, 'utf8')));
    cache.set(file, { mtimeMs: stat.mtimeMs, json });
    return json;
  }
  const documentOf = (version: Version) => (version === 'v3' ? v3 : legacy(version));

  return async function docs(ctx, next) {
    if (ctx.path !== '/docs' && !ctx.path.startsWith('/docs/')) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      ctx.status = 405;
      return;
    }
    ctx.set('X-Content-Type-Options', 'nosniff');
    if (/^\/docs(\/v[123])?\/$/.test(ctx.path)) return ctx.redirect(ctx.path.slice(0, -1));
    if (ctx.path === '/docs/assets/scalar.js') {
      ctx.set('Cache-Control', 'public, max-age=86400');
      ctx.type = 'text/javascript; charset=utf-8';
      ctx.body = fs.createReadStream(SCALAR);
      return;
    }
    if (ctx.path === '/docs/assets/init.js') {
      ctx.set('Cache-Control', 'public, max-age=86400');
      ctx.type = 'text/javascript; charset=utf-8';
      ctx.body = INIT;
      return;
    }
    const m = /^\/docs(?:\/(v[123]))?(\/openapi\.json)?$/.exec(ctx.path);
    const version = (m?.[1] ?? 'v3') as Version;
    const document = m && (m[1] || !m[2]) ? documentOf(version) : undefined;
    if (!document) {
      ctx.status = 404;
      ctx.type = 'text/plain; charset=utf-8';
      ctx.body = 'Not found\n';
      return;
    }
    ctx.set('Cache-Control', 'no-cache');
    if (m![2]) {
      ctx.type = 'application/json';
      ctx.body = document;
      return;
    }
    ctx.set('Content-Security-Policy', CSP);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page(version);
  };
}
