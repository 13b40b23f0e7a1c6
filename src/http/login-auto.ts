// GET /login/auto?token=...: the student's password-less sign-in link (v1 `login_auto`, v3
// `auto_login_url`), outside the API generations. It records the access (started_at the first
// time, last_access_at every time) and shows a small page with the student's current products and
// their progress. An unknown token is 404 with a small page. The token is a bearer secret in a
// URL: the answer is never cached and never leaks it through Referer.
import type { Middleware, Context } from 'koa';
import type { Services } from '../services.ts';
import type { User } from '../domain/users/repo.ts';
import { isAppError } from '../errors.ts';
import { studentAccess, type AccessEntry } from './student-access.ts';

const escape = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="pt-BR">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}
li{margin:.5rem 0}progress{width:10rem;vertical-align:middle}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

interface Shown {
  entry: AccessEntry;
  percent: number;
  completed: number;
  total: number;
}

function studentPage(u: User, shown: Shown[]): string {
  const items = shown.map(({ entry, percent, completed, total }) => {
    const until = entry.enrollment.endsAt
      ? ` · até ${escape(entry.enrollment.endsAt.slice(0, 10))}`
      : '';
    return (
      `<li data-product-id="${entry.product.id}"><strong>${escape(entry.product.name)}</strong>` +
      `<br><progress max="100" value="${percent}">${percent}%</progress> ${percent}%` +
      ` (${completed} de ${total} aulas)${until}</li>`
    );
  });
  const list = items.length
    ? `<ul>\n${items.join('\n')}\n</ul>`
    : '<p>Você ainda não tem acesso a nenhum produto.</p>';
  return page('Seus cursos', `<h1>Olá, ${escape(u.name)}</h1>\n<h2>Seus cursos</h2>\n${list}`);
}

const NOT_FOUND = page(
  'Link inválido',
  '<h1>Link inválido</h1>\n<p>Este link de acesso não existe ou foi substituído. Peça um novo à escola.</p>',
);

function html(ctx: Context, status: number, body: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('X-Robots-Tag', 'noindex');
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
  ctx.body = body;
}

export function autoLoginRoutes(services: Services): Middleware {
  return async function autoLogin(ctx, next) {
    if (ctx.path !== '/login/auto') return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      return html(ctx, 405, page('Método não permitido', '<h1>Método não permitido</h1>'));
    }
    try {
      await services.rateLimits.consume('source', ctx.ip || 'unknown');
    } catch (err) {
      if (!isAppError(err)) throw err;
      for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
      return html(ctx, err.status, page('Tente mais tarde', '<h1>Tente mais tarde</h1>'));
    }
    const token = typeof ctx.query.token === 'string' ? ctx.query.token : '';
    // A token is base62: anything else names no student (and never reaches the database).
    const u = /^[0-9A-Za-z]{1,64}$/.test(token)
      ? await services.users.signInWithToken(token)
      : null;
    if (!u) return html(ctx, 404, NOT_FOUND);
    ctx.state.route = '/login/auto';
    const shown: Shown[] = [];
    for (const entry of await studentAccess(services, u.accountId, u.id)) {
      if (entry.enrollment.ended) continue;
      const p = await services.progress.productProgress(u.accountId, u.id, entry.product.id);
      shown.push({ entry, percent: p.percent, completed: p.completed, total: p.total });
    }
    html(ctx, 200, studentPage(u, shown));
  };
}
