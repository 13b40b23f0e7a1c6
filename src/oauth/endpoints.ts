// The machine-facing endpoints: RFC 8414 discovery, the token endpoint (RFC 6749 errors, always
// `Cache-Control: no-store`) and RFC 7009 revocation (always 200 with an empty body).
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Web } from './context.ts';
import { CLIENT_ID } from './constants.ts';
import { OAuthError } from './tokens.ts';
import { duplicated, InvalidCharacters, readForm } from './web.ts';
import { requestLog } from '../http/common.ts';
import { ClientClosedRequest } from '../http/body.ts';
import { isConnectionLoss } from '../db/pg-errors.ts';

export function metadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
  };
}

function noStore(ctx: Context): void {
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
}

function required(form: URLSearchParams, name: string): string {
  const value = form.get(name);
  if (!value) throw new OAuthError('invalid_request', `${name} is required.`);
  return value;
}

/** The client: public, so it only names itself; any attempt to authenticate is an error. */
function checkClient(ctx: Context, form: URLSearchParams): void {
  if (ctx.get('authorization') || form.has('client_secret') || form.has('client_assertion')) {
    ctx.set('WWW-Authenticate', 'Basic realm="oauth"');
    throw new OAuthError('invalid_client', 'service-cli is a public client: send no secret.', 401);
  }
  const clientId = required(form, 'client_id');
  if (clientId !== CLIENT_ID) throw new OAuthError('invalid_client', 'Unknown client.', 401);
}

async function token(web: Web, ctx: Context) {
  if (!ctx.is('application/x-www-form-urlencoded'))
    throw new OAuthError('invalid_request', 'The body must be application/x-www-form-urlencoded.');
  const form = await readForm(ctx);
  const twice = duplicated(form);
  if (twice) throw new OAuthError('invalid_request', `${twice} was sent more than once.`);
  checkClient(ctx, form);
  const grantType = required(form, 'grant_type');
  if (grantType === 'authorization_code') {
    return web.tokens.exchangeCode({
      code: required(form, 'code'),
      codeVerifier: required(form, 'code_verifier'),
      redirectUri: required(form, 'redirect_uri'),
    });
  }
  if (grantType === 'refresh_token') return web.tokens.refresh(required(form, 'refresh_token'));
  throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported.`);
}

function serverError(web: Web, ctx: Context, err: unknown): OAuthError {
  // The database away (a restart): 503, as the API answers, and a warning without a stack.
  if (isConnectionLoss(err)) {
    requestLog(ctx, web.logger).warn({ err: String(err) }, 'database unavailable');
    return new OAuthError(
      'temporarily_unavailable',
      'The database did not answer. Try again.',
      503,
    );
  }
  requestLog(ctx, web.logger).error({ err }, 'token endpoint failed');
  return new OAuthError('server_error', 'The request could not be completed. Try again.', 500);
}

export function endpointRoutes(router: Router, web: Web): void {
  router.get('/.well-known/oauth-authorization-server', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = metadata(web.issuer);
  });

  router.post('/oauth/token', async (ctx) => {
    noStore(ctx);
    try {
      ctx.body = await token(web, ctx);
    } catch (err) {
      // A client that hung up mid-form is nobody's failure (the OAuth middleware records it).
      if (err instanceof ClientClosedRequest) throw err;
      const e =
        err instanceof OAuthError
          ? err
          : err instanceof InvalidCharacters
            ? new OAuthError('invalid_request', err.description)
            : serverError(web, ctx, err);
      ctx.status = e.status;
      ctx.body = { error: e.error, error_description: e.description };
    }
  });

  router.post('/oauth/revoke', async (ctx) => {
    noStore(ctx);
    const form = await readForm(ctx);
    const value = form.get('token');
    try {
      if (value) await web.tokens.revoke(value);
    } catch (err) {
      // Revocation answers 200 whatever happens; a failure is still worth a log line.
      requestLog(ctx, web.logger).error({ err }, 'token revocation failed');
    }
    ctx.status = 200;
    ctx.body = '';
  });
}
