// Server-rendered pages: no JavaScript, one small stylesheet, every value escaped, localized by
// Accept-Language. Pages are never cached or framed (the consent page must not be clickjacked).
import type { Context } from 'koa';
import { negotiateLocale, type Locale } from '../i18n/messages.ts';
import { pageText, type PageKey } from './page-messages.ts';

export const STYLESHEET_PATH = '/admin/style.css';

export const STYLESHEET = `*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2430}
main{max-width:28rem;margin:4rem auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 4px rgba(0,0,0,.12)}
h1{font-size:1.35rem;margin:0 0 1rem}
label{display:block;margin:1rem 0 .25rem;font-weight:600}
input[type=email],input[type=password],input[type=text]{width:100%;padding:.6rem;border:1px solid #b8bfca;border-radius:4px;font:inherit}
button{margin-top:1.25rem;padding:.6rem 1.2rem;border:0;border-radius:4px;background:#1f5fbf;color:#fff;font:inherit;cursor:pointer}
button.secondary{background:#e6e9ef;color:#1d2430;margin-left:.5rem}
.error{padding:.75rem;border-radius:4px;background:#fdecea;color:#8a1c13}
.notice{padding:.75rem;border-radius:4px;background:#e8f3ea;color:#1e5a2b}
dl{display:grid;grid-template-columns:auto 1fr;gap:.25rem 1rem}
dt{font-weight:600}dd{margin:0}
code{font-size:.9em;word-break:break-all}
`;

export function escapeHtml(value: unknown): string {
  return String(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

export function localeOf(ctx: Context): Locale {
  return negotiateLocale(ctx.get('accept-language'));
}

/** A translator bound to the request's locale; the result is HTML (text and values escaped). */
export function translator(locale: Locale) {
  return (key: PageKey, params: Record<string, string | number> = {}) =>
    escapeHtml(pageText(locale, key)).replace(/\{(\w+)\}/g, (m, name: string) =>
      name in params ? escapeHtml(params[name]) : m,
    );
}

export function hidden(name: string, value: string): string {
  return `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`;
}

export function renderPage(
  ctx: Context,
  status: number,
  locale: Locale,
  title: string,
  body: string,
): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Language', locale);
  ctx.set('Vary', 'Accept-Language, Cookie');
  ctx.set(
    'Content-Security-Policy',
    "default-src 'none'; style-src 'self'; base-uri 'none'; frame-ancestors 'none'",
  );
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('X-Content-Type-Options', 'nosniff');
  // The authorize URL carries state and PKCE values: never leak it to another site.
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.body = `<!doctype html>
<html lang="${locale}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · School Platform</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<main>
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`;
}
