// Administrator sign-in: /admin/sign-in (email + password, scrypt), /admin/sign-in/two-factor
// (TOTP, RFC 6238), /admin (who is signed in) and /admin/sign-out. Every form carries a CSRF token;
// attempts are throttled; an unknown email costs the same scrypt work as a wrong password.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { verifySync } from 'otplib';
import { currentSession, seeOther, type Web } from './context.ts';
import {
  escapeHtml,
  hidden,
  localeOf,
  renderPage,
  translator,
  STYLESHEET,
  STYLESHEET_PATH,
} from './html.ts';
import {
  clearCookie,
  csrfToken,
  csrfValid,
  ensureCsrfCookie,
  getCookie,
  queryParam,
  readForm,
  safeReturnTo,
  setCookie,
} from './web.ts';

function signInUrl(returnTo: string, flag?: string): string {
  const q = new URLSearchParams({ return_to: returnTo });
  if (flag) q.set(flag, '1');
  return `/admin/sign-in?${q}`;
}

function renderSignIn(
  web: Web,
  ctx: Context,
  status: number,
  returnTo: string,
  message?: { kind: 'error' | 'notice'; html: string },
  email = '',
): void {
  const locale = localeOf(ctx);
  const t = translator(locale);
  const binding = ensureCsrfCookie(ctx, web.names, web.secure);
  const box = message ? `<p class="${message.kind}" role="alert">${message.html}</p>` : '';
  renderPage(
    ctx,
    status,
    locale,
    t('sign_in_title'),
    `${box}
<form method="post" action="/admin/sign-in">
${hidden('csrf', csrfToken(web.csrfKey, binding))}
${hidden('return_to', returnTo)}
<label for="email">${t('email')}</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(email)}">
<label for="password">${t('password')}</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">${t('sign_in_button')}</button>
</form>`,
  );
}

function renderTwoFactor(
  web: Web,
  ctx: Context,
  status: number,
  token: string,
  returnTo: string,
  error?: string,
): void {
  const locale = localeOf(ctx);
  const t = translator(locale);
  renderPage(
    ctx,
    status,
    locale,
    t('two_factor_title'),
    `${error ? `<p class="error" role="alert">${error}</p>` : ''}
<p>${t('two_factor_help')}</p>
<form method="post" action="/admin/sign-in/two-factor">
${hidden('csrf', csrfToken(web.csrfKey, token))}
${hidden('return_to', returnTo)}
<label for="code">${t('code_label')}</label>
<input id="code" name="code" type="text" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code" required autofocus>
<button type="submit">${t('verify_button')}</button>
</form>`,
  );
}

/** A page for a form whose CSRF token is missing or wrong: nothing was done. */
export function renderCsrfFailure(ctx: Context): void {
  const locale = localeOf(ctx);
  const t = translator(locale);
  renderPage(ctx, 403, locale, t('error_title'), `<p class="error">${t('csrf_failed')}</p>`);
}

function throttled(ctx: Context, seconds: number): string {
  ctx.set('Retry-After', String(seconds));
  return translator(localeOf(ctx))('throttled', { minutes: Math.max(1, Math.ceil(seconds / 60)) });
}

export function signInRoutes(router: Router, web: Web): void {
  router.get(STYLESHEET_PATH, (ctx) => {
    ctx.type = 'text/css; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = STYLESHEET;
  });

  router.get('/admin/sign-in', async (ctx) => {
    const returnTo = safeReturnTo(queryParam(ctx, 'return_to'));
    const session = await currentSession(web, ctx);
    if (session?.stage === 'complete') return seeOther(ctx, returnTo);
    const t = translator(localeOf(ctx));
    const message = ctx.query.signed_out
      ? { kind: 'notice' as const, html: t('signed_out') }
      : ctx.query.expired
        ? { kind: 'error' as const, html: t('session_expired') }
        : undefined;
    renderSignIn(web, ctx, 200, returnTo, message);
  });

  router.post('/admin/sign-in', async (ctx) => {
    const form = await readForm(ctx);
    if (!csrfValid(web.csrfKey, getCookie(ctx, web.names.csrf), form.get('csrf')))
      return renderCsrfFailure(ctx);
    const returnTo = safeReturnTo(form.get('return_to'));
    const email = (form.get('email') ?? '').trim().slice(0, 320);
    const password = form.get('password') ?? '';
    const ip = ctx.ip || 'unknown';
    const wait = await web.throttle.passwordAttempt(ip, email);
    if (wait)
      return renderSignIn(
        web,
        ctx,
        429,
        returnTo,
        { kind: 'error', html: throttled(ctx, wait) },
        email,
      );

    const admin = await web
      .db('administrators')
      .where({ email_lower: email.toLowerCase(), status: 'active' })
      .first('id', 'password_hash');
    const ok = await web.accounts.checkPassword(password, admin?.password_hash);
    if (!ok) {
      const t = translator(localeOf(ctx));
      return renderSignIn(
        web,
        ctx,
        401,
        returnTo,
        { kind: 'error', html: t('sign_in_failed') },
        email,
      );
    }
    await web.throttle.passwordSucceeded(ip, email);
    const token = await web.sessions.start(admin.id);
    setCookie(ctx, web.names.session, token, web.secure);
    seeOther(ctx, `/admin/sign-in/two-factor?${new URLSearchParams({ return_to: returnTo })}`);
  });

  router.get('/admin/sign-in/two-factor', async (ctx) => {
    const returnTo = safeReturnTo(queryParam(ctx, 'return_to'));
    const session = await currentSession(web, ctx);
    if (!session) return seeOther(ctx, signInUrl(returnTo, 'expired'));
    if (session.stage === 'complete') return seeOther(ctx, returnTo);
    renderTwoFactor(web, ctx, 200, session.token, returnTo);
  });

  router.post('/admin/sign-in/two-factor', async (ctx) => {
    const form = await readForm(ctx);
    const session = await currentSession(web, ctx);
    if (!csrfValid(web.csrfKey, session?.token, form.get('csrf'))) return renderCsrfFailure(ctx);
    const returnTo = safeReturnTo(form.get('return_to'));
    if (session!.stage === 'complete') return seeOther(ctx, returnTo);
    const t = translator(localeOf(ctx));
    const wait = await web.throttle.codeAttempt(session!.adminId);
    if (wait) return renderTwoFactor(web, ctx, 429, session!.token, returnTo, throttled(ctx, wait));

    const step = validStep(web, session!.totpSecret, form.get('code'));
    // The step is used up by completing the session: of parallel submissions, one gets it.
    const token =
      step === undefined ? null : await web.sessions.complete(session!.id, session!.adminId, step);
    if (!token)
      return renderTwoFactor(web, ctx, 401, session!.token, returnTo, t('two_factor_failed'));
    await web.throttle.codeSucceeded(session!.adminId);
    setCookie(ctx, web.names.session, token, web.secure);
    seeOther(ctx, returnTo);
  });

  router.get('/admin', async (ctx) => {
    const session = await currentSession(web, ctx);
    if (session?.stage !== 'complete') return seeOther(ctx, signInUrl('/admin'));
    const locale = localeOf(ctx);
    const t = translator(locale);
    renderPage(
      ctx,
      200,
      locale,
      t('signed_in_title'),
      `<p>${t('signed_in_as', { email: session.email })}</p>
<dl><dt>${t('consent_account')}</dt><dd>${escapeHtml(session.accountName)}</dd></dl>
<form method="post" action="/admin/sign-out">
${hidden('csrf', csrfToken(web.csrfKey, session.token))}
<button type="submit">${t('sign_out_button')}</button>
</form>`,
    );
  });

  // Ending the session also ends human mode for every token granted under it.
  router.post('/admin/sign-out', async (ctx) => {
    const form = await readForm(ctx);
    const session = await currentSession(web, ctx);
    if (!session) return seeOther(ctx, signInUrl('/admin', 'signed_out'));
    if (!csrfValid(web.csrfKey, session.token, form.get('csrf'))) return renderCsrfFailure(ctx);
    await web.sessions.end(session.id);
    clearCookie(ctx, web.names.session, web.secure);
    seeOther(ctx, signInUrl('/admin', 'signed_out'));
  });
}

/** The TOTP time step of a valid code (one step of clock drift either way); used or not. */
function validStep(web: Web, secret: string, code: string | null): number | undefined {
  if (!code || !/^[0-9]{6}$/.test(code.trim())) return undefined;
  try {
    const result = verifySync({
      secret,
      token: code.trim(),
      epoch: Math.floor(web.clock.now().getTime() / 1000),
      epochTolerance: 30,
    });
    return result.valid && 'timeStep' in result ? result.timeStep : undefined;
  } catch {
    return undefined;
  }
}
