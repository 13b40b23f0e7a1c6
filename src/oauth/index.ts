// The OAuth authorization server on the root host (discovery, authorize, token, revoke), the
// administrator sign-in pages, and the verifier for human-mode requests on /api/v3.
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { serverKey } from '../db/server-keys.ts';
import type { HumanVerifier } from '../http/v3/authenticate.ts';
import { loadSecretsKey } from '../secrets-key.ts';
import { authorizeRoutes } from './authorize.ts';
import type { Web } from './context.ts';
import type { OAuthDeps } from './deps.ts';
import { endpointRoutes } from './endpoints.ts';
import { localeOf, renderPage } from './html.ts';
import { SigningKeys } from './keys.ts';
import { Sessions } from './sessions.ts';
import { signInRoutes } from './signin.ts';
import { SignInThrottle } from './throttle.ts';
import { TokenService } from './tokens.ts';
import { humanVerifier } from './verifier.ts';
import { cookieNames, InvalidCharacters, malformedHost, rejectNul } from './web.ts';
import { requestLog } from '../http/common.ts';
import { closedByClient } from '../http/body.ts';
import { isConnectionLoss } from '../db/pg-errors.ts';

export { rotateSigningKey } from './keys.ts';

/** Paths served here; everything else passes through untouched (errors included). */
function isOAuthPath(path: string): boolean {
  return (
    path === '/.well-known/oauth-authorization-server' ||
    path.startsWith('/oauth/') ||
    path === '/admin' ||
    path.startsWith('/admin/')
  );
}

/** 400: the endpoints' JSON error (RFC 6749 5.2) or a page. */
function badRequest(ctx: Context, description: string): void {
  if (ctx.path.startsWith('/admin') || ctx.path === '/oauth/authorize')
    return renderPage(
      ctx,
      400,
      localeOf(ctx),
      'Bad request',
      `<p class="error">${description}</p>`,
    );
  ctx.status = 400;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error: 'invalid_request', error_description: description };
}

export async function createOAuth(
  deps: OAuthDeps,
): Promise<{ routes: Middleware; verifier: HumanVerifier | null }> {
  const { db, clock, config, logger } = deps;
  const issuer = config.publicBaseUrl;
  const secure = issuer.startsWith('https://');
  const secretsKey = deps.secretsKey ?? loadSecretsKey(config);
  const keys = new SigningKeys(db, clock, secretsKey);
  await keys.init();
  const web: Web = {
    db,
    clock,
    logger,
    issuer,
    secure,
    names: cookieNames(secure),
    csrfKey: await serverKey(db, 'oauth_csrf', clock.now().toISOString()),
    sessions: new Sessions(db, clock, secretsKey),
    throttle: new SignInThrottle(db),
    tokens: new TokenService(db, clock, keys, issuer),
    accounts: deps.accounts,
  };

  const router = new Router();
  endpointRoutes(router, web);
  authorizeRoutes(router, web);
  signInRoutes(router, web);
  const routes = router.routes() as unknown as Middleware;
  const allowed = router.allowedMethods() as unknown as Middleware;

  const oauth: Middleware = async (ctx, next) => {
    if (!isOAuthPath(ctx.path)) return next();
    if (malformedHost(ctx)) return badRequest(ctx, 'The Host header of this request is not valid.');
    try {
      rejectNul(new URLSearchParams(ctx.querystring));
      await routes(ctx, () => allowed(ctx, next));
    } catch (err) {
      if (closedByClient(ctx, err)) return;
      if (err instanceof InvalidCharacters) return badRequest(ctx, err.description);
      // Pages never show a stack trace; the log has it (without cookies or form values). The
      // database away (a restart) is 503 and a warning.
      const away = isConnectionLoss(err);
      if (away) requestLog(ctx, logger).warn({ err: String(err) }, 'database unavailable');
      else requestLog(ctx, logger).error({ err }, 'oauth page failed');
      const locale = localeOf(ctx);
      renderPage(
        ctx,
        away ? 503 : 500,
        locale,
        'Error',
        '<p class="error">Something went wrong. Try again.</p>',
      );
    }
  };
  return { routes: oauth, verifier: humanVerifier(db, clock, keys, issuer) };
}
