// Validation of an authorization request, in the specification's order. Problems with the client
// or the redirect_uri are shown on a page and never redirected (RFC 6749 4.1.2.1): until the
// redirect_uri is known good, sending the browser there would make this server an open redirector.
import type { PageKey } from './page-messages.ts';
import { CLIENT_ID } from './constants.ts';
import { duplicated } from './web.ts';

export interface AuthorizeRequest {
  redirectUri: string;
  codeChallenge: string;
  state: string | null;
}

export type AuthorizeCheck =
  | { kind: 'ok'; request: AuthorizeRequest }
  | { kind: 'page'; error: string; message: PageKey; params?: Record<string, string> }
  | {
      kind: 'redirect';
      redirectUri: string;
      state: string | null;
      error: string;
      description: string;
    };

const PARAMS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'code_challenge',
  'code_challenge_method',
  'state',
  'scope',
] as const;

/**
 * Exactly http://127.0.0.1:{port}/callback or http://[::1]:{port}/callback, compared as text:
 * no URL parser in between that could read userinfo, fragments, case or encodings differently.
 */
export function isLoopbackRedirect(uri: string): boolean {
  const m = /^http:\/\/(?:127\.0\.0\.1|\[::1\]):([1-9][0-9]{0,4})\/callback$/.exec(uri);
  return Boolean(m && Number(m[1]) <= 65535);
}

const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export function checkAuthorizeRequest(q: URLSearchParams): AuthorizeCheck {
  // PKCE "plain" is refused before anything else is even looked at.
  if (q.getAll('code_challenge_method').includes('plain'))
    return { kind: 'page', error: 'invalid_request', message: 'err_plain' };
  const twice = duplicated(q, PARAMS);
  if (twice)
    return {
      kind: 'page',
      error: 'invalid_request',
      message: 'err_duplicate',
      params: { name: twice },
    };
  const clientId = q.get('client_id');
  if (!clientId) return { kind: 'page', error: 'invalid_request', message: 'err_client_missing' };
  if (clientId !== CLIENT_ID)
    return { kind: 'page', error: 'unauthorized_client', message: 'err_client_unknown' };
  const redirectUri = q.get('redirect_uri');
  if (!redirectUri)
    return { kind: 'page', error: 'invalid_request', message: 'err_redirect_missing' };
  if (!isLoopbackRedirect(redirectUri))
    return { kind: 'page', error: 'invalid_request', message: 'err_redirect_invalid' };

  // From here on the redirect_uri is trusted: errors go back to the client (with its state).
  const state = q.get('state');
  const back = (error: string, description: string): AuthorizeCheck => ({
    kind: 'redirect',
    redirectUri,
    state,
    error,
    description,
  });
  const responseType = q.get('response_type');
  if (!responseType) return back('invalid_request', 'response_type is required.');
  if (responseType !== 'code')
    return back('unsupported_response_type', 'Only response_type=code is supported.');
  if (q.get('code_challenge_method') !== 'S256')
    return back('invalid_request', 'PKCE is required: code_challenge_method must be S256.');
  const codeChallenge = q.get('code_challenge');
  if (!codeChallenge || !CHALLENGE.test(codeChallenge))
    return back('invalid_request', 'code_challenge must be a base64url SHA-256 (43 characters).');
  // No OpenID Connect here: an ID token is never issued.
  if ((q.get('scope') ?? '').split(' ').includes('openid'))
    return back('invalid_scope', 'OpenID Connect is not supported; no scope is needed.');
  return { kind: 'ok', request: { redirectUri, codeChallenge, state } };
}

/** The loopback URL with the response parameters, `iss` included (RFC 9207). */
export function redirectWith(
  redirectUri: string,
  params: Record<string, string | null | undefined>,
): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) q.set(k, v);
  return `${redirectUri}?${q}`;
}
