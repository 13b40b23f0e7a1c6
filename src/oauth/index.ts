// Placeholder until the OAuth authorization server (issue #3) lands.
import type { Middleware } from 'koa';
import type { HumanVerifier } from '../http/v3/authenticate.ts';
import type { OAuthDeps } from './deps.ts';

export async function createOAuth(
  _deps: OAuthDeps,
): Promise<{ routes: Middleware; verifier: HumanVerifier | null }> {
  return { routes: (_ctx, next) => next(), verifier: null };
}
