// The CLI as an OAuth client (oauth4webapi): public client service-cli, no secret, PKCE S256.
import * as oauth from 'oauth4webapi';
import { decodeJwt } from 'jose';
import type { StoredTokens, TokenStore } from './store.ts';
import { unreachableMessage } from './reach.ts';

export const CLIENT: oauth.Client = { client_id: 'service-cli' };
const CLIENT_AUTH = oauth.None();
/** Refresh a little before expiry, so a request does not race the clock. */
const EARLY_SECONDS = 30;

export class CliError extends Error {}

export class Server {
  private metadata: oauth.AuthorizationServer | undefined;
  readonly baseUrl: string;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
  }

  /** oauth4webapi refuses http unless told; a local http server is the normal development case. */
  get options() {
    return new URL(this.baseUrl).protocol === 'http:'
      ? { [oauth.allowInsecureRequests]: true }
      : {};
  }

  async discover(): Promise<oauth.AuthorizationServer> {
    if (this.metadata) return this.metadata;
    const issuer = new URL(this.baseUrl);
    let res: Response;
    try {
      res = await oauth.discoveryRequest(issuer, { ...this.options, algorithm: 'oauth2' });
    } catch (err) {
      throw new CliError(
        unreachableMessage(err, this.baseUrl) ??
          `cannot read ${this.baseUrl}'s OAuth metadata: ${(err as Error).message}`,
      );
    }
    this.metadata = await oauth.processDiscoveryResponse(issuer, res);
    return this.metadata;
  }

  async exchangeCode(callback: URL, state: string, redirectUri: string, verifier: string) {
    const as = await this.discover();
    const params = oauth.validateAuthResponse(as, CLIENT, callback, state);
    const res = await oauth.authorizationCodeGrantRequest(
      as,
      CLIENT,
      CLIENT_AUTH,
      params,
      redirectUri,
      verifier,
      this.options,
    );
    return toStored(await oauth.processAuthorizationCodeResponse(as, CLIENT, res));
  }

  async refresh(refreshToken: string): Promise<StoredTokens> {
    const as = await this.discover();
    const res = await oauth.refreshTokenGrantRequest(
      as,
      CLIENT,
      CLIENT_AUTH,
      refreshToken,
      this.options,
    );
    return toStored(await oauth.processRefreshTokenResponse(as, CLIENT, res));
  }

  async revoke(token: string): Promise<void> {
    const as = await this.discover();
    const res = await oauth.revocationRequest(as, CLIENT, CLIENT_AUTH, token, this.options);
    await oauth.processRevocationResponse(res);
  }
}

function toStored(r: oauth.TokenEndpointResponse): StoredTokens {
  if (!r.refresh_token || !r.expires_in) throw new CliError('the server returned no refresh token');
  return {
    access_token: r.access_token,
    refresh_token: r.refresh_token,
    expires_at: new Date(Date.now() + r.expires_in * 1000).toISOString(),
    admin_id: String(decodeJwt(r.access_token).sub ?? ''),
  };
}

/** The stored access token, refreshed (and the rotated pair saved) when it has expired. */
export async function accessToken(
  server: Server,
  store: TokenStore,
  options: { force?: boolean } = {},
): Promise<string> {
  const stored = store.get(server.baseUrl);
  if (!stored)
    throw new CliError(`not logged in to ${server.baseUrl}: run "npm run school -- login"`);
  const fresh = Date.parse(stored.expires_at) - EARLY_SECONDS * 1000 > Date.now();
  if (fresh && !options.force) return stored.access_token;
  try {
    const next = await server.refresh(stored.refresh_token);
    store.set(server.baseUrl, next);
    return next.access_token;
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError && err.error === 'invalid_grant') {
      // Signed out, revoked or expired: the stored tokens are worthless now.
      store.delete(server.baseUrl);
      throw new CliError('the session has ended (invalid_grant): run "npm run school -- login"');
    }
    throw err;
  }
}
