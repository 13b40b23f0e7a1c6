// GET /oauth/authorize shows the consent page (after sign-in with two-factor); POST approves or
// denies. The form posts back to the same URL, so the POST validates the very same request again;
// its body only carries the CSRF token and the decision.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { currentSession, seeOther, type Web } from './context.ts';
import { escapeHtml, hidden, localeOf, renderPage, translator } from './html.ts';
import { checkAuthorizeRequest, redirectWith, type AuthorizeCheck } from './authorize-request.ts';
import type { AdminSession } from './sessions.ts';
import { csrfToken, csrfValid, readForm } from './web.ts';
import { renderCsrfFailure } from './signin.ts';
import { CLIENT_ID } from './constants.ts';

const CLIENT_NAME = 'School Platform CLI';

function requestQuery(ctx: Context): URLSearchParams {
  return new URLSearchParams(ctx.querystring);
}

/** Renders or redirects a failed check; true when the request may go on. */
function handleFailure(
  web: Web,
  ctx: Context,
  check: AuthorizeCheck,
): check is Extract<AuthorizeCheck, { kind: 'ok' }> {
  if (check.kind === 'ok') return true;
  if (check.kind === 'redirect') {
    seeOther(
      ctx,
      redirectWith(check.redirectUri, {
        error: check.error,
        error_description: check.description,
        state: check.state,
        iss: web.issuer,
      }),
    );
    return false;
  }
  const locale = localeOf(ctx);
  const t = translator(locale);
  renderPage(
    ctx,
    400,
    locale,
    t('error_title'),
    `<p class="error" role="alert">${t(check.message, check.params)}</p>
<p><code>error=${escapeHtml(check.error)}</code></p>`,
  );
  return false;
}

function renderConsent(web: Web, ctx: Context, session: AdminSession, redirectUri: string): void {
  const locale = localeOf(ctx);
  const t = translator(locale);
  const client = `${CLIENT_NAME} (${CLIENT_ID})`;
  const action = `/oauth/authorize?${ctx.querystring}`;
  renderPage(
    ctx,
    200,
    locale,
    t('consent_title'),
    `<p>${t('consent_intro', { client })}</p>
<dl>
<dt>${t('consent_admin')}</dt><dd>${escapeHtml(session.email)}</dd>
<dt>${t('consent_account')}</dt><dd>${escapeHtml(session.accountName)} (#${session.accountId})</dd>
</dl>
<p>${t('consent_grants')}</p>
<ul>
<li>${t('grant_api')}</li>
<li>${t('grant_duration')}</li>
<li>${t('grant_end')}</li>
</ul>
<p>${t('consent_redirect', { uri: redirectUri })}</p>
<form method="post" action="${escapeHtml(action)}">
${hidden('csrf', csrfToken(web.csrfKey, session.token))}
<button type="submit" name="decision" value="approve">${t('approve')}</button>
<button type="submit" name="decision" value="deny" class="secondary">${t('deny')}</button>
</form>`,
  );
}

export function authorizeRoutes(router: Router, web: Web): void {
  router.get('/oauth/authorize', async (ctx) => {
    const check = checkAuthorizeRequest(requestQuery(ctx));
    if (!handleFailure(web, ctx, check)) return;
    const session = await currentSession(web, ctx);
    if (session?.stage !== 'complete') {
      // Sign in (with two-factor), then come back to this very request.
      const returnTo = `/oauth/authorize?${ctx.querystring}`;
      return seeOther(ctx, `/admin/sign-in?${new URLSearchParams({ return_to: returnTo })}`);
    }
    renderConsent(web, ctx, session, check.request.redirectUri);
  });

  router.post('/oauth/authorize', async (ctx) => {
    const form = await readForm(ctx);
    const check = checkAuthorizeRequest(requestQuery(ctx));
    if (!handleFailure(web, ctx, check)) return;
    const session = await currentSession(web, ctx);
    if (session?.stage !== 'complete') {
      const returnTo = `/oauth/authorize?${ctx.querystring}`;
      return seeOther(
        ctx,
        `/admin/sign-in?${new URLSearchParams({ return_to: returnTo, expired: '1' })}`,
      );
    }
    if (!csrfValid(web.csrfKey, session.token, form.get('csrf'))) return renderCsrfFailure(ctx);
    const { redirectUri, codeChallenge, state } = check.request;
    if (form.get('decision') !== 'approve') {
      return seeOther(
        ctx,
        redirectWith(redirectUri, {
          error: 'access_denied',
          error_description: 'The administrator denied the request.',
          state,
          iss: web.issuer,
        }),
      );
    }
    const code = await web.tokens.issueCode({
      adminId: session.adminId,
      sessionId: session.id,
      redirectUri,
      codeChallenge,
    });
    seeOther(ctx, redirectWith(redirectUri, { code, state, iss: web.issuer }));
  });
}
