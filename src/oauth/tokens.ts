// Authorization codes, token issuance, refresh rotation with reuse detection, and revocation.
// Codes and refresh tokens are random and stored as SHA-256 hashes; access tokens by jti.
import crypto from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Db, Tx } from '../db/knex.ts';
import { sha256 } from '../domain/shared/ids.ts';
import { signAccessToken, signedJti } from './access-token.ts';
import {
  ACCESS_TOKEN_SECONDS,
  CLIENT_ID,
  CODE_SECONDS,
  REFRESH_TOKEN_SECONDS,
} from './constants.ts';
import type { SigningKeys } from './keys.ts';

/** An RFC 6749 section 5.2 error. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(error);
  }
}

export interface TokenResponse {
  token_type: 'Bearer';
  access_token: string;
  expires_in: number;
  refresh_token: string;
}

interface Grant {
  adminId: number;
  sessionId: number;
  familyId: string;
}

const random = () => crypto.randomBytes(32).toString('base64url');
const invalidGrant = (why: string) => new OAuthError('invalid_grant', why);

export class TokenService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly keys: SigningKeys,
    private readonly issuer: string,
  ) {}

  private at(offsetSeconds = 0): string {
    return new Date(this.clock.now().getTime() + offsetSeconds * 1000).toISOString();
  }

  async issueCode(input: {
    adminId: number;
    sessionId: number;
    redirectUri: string;
    codeChallenge: string;
  }): Promise<string> {
    const code = random();
    // Sign-ins are rare enough to carry the housekeeping.
    await this.purgeExpired();
    await this.db('oauth_codes').insert({
      code_hash: sha256(code),
      client_id: CLIENT_ID,
      redirect_uri: input.redirectUri,
      code_challenge: input.codeChallenge,
      admin_id: input.adminId,
      session_id: input.sessionId,
      family_id: crypto.randomBytes(12).toString('hex'),
      created_at: this.at(),
      expires_at: this.at(CODE_SECONDS),
    });
    return code;
  }

  async exchangeCode(input: {
    code: string;
    codeVerifier: string;
    redirectUri: string;
  }): Promise<TokenResponse> {
    const hash = sha256(input.code);
    const row = await this.db('oauth_codes').where('code_hash', hash).first();
    if (!row) throw invalidGrant('The authorization code is invalid.');
    // Consumed before any other check: a failed attempt (wrong verifier) also burns the code.
    const consumed = await this.db('oauth_codes')
      .where('code_hash', hash)
      .whereNull('used_at')
      .update({ used_at: this.at() });
    if (!consumed) {
      // RFC 6749 4.1.2: a code used twice revokes what was issued from it.
      await this.revokeFamily(row.family_id);
      throw invalidGrant('The authorization code was already used.');
    }
    if (row.expires_at <= this.at()) throw invalidGrant('The authorization code has expired.');
    if (row.client_id !== CLIENT_ID) throw invalidGrant('The code was issued to another client.');
    if (row.redirect_uri !== input.redirectUri)
      throw invalidGrant('redirect_uri differs from the authorization request.');
    const challenge = crypto.createHash('sha256').update(input.codeVerifier).digest('base64url');
    if (!safeEqual(challenge, row.code_challenge))
      throw invalidGrant('code_verifier does not match the code_challenge.');
    const grant = { adminId: row.admin_id, sessionId: row.session_id, familyId: row.family_id };
    await this.assertGrantAlive(grant);
    return this.issue(grant);
  }

  async refresh(refreshToken: string): Promise<TokenResponse> {
    const hash = sha256(refreshToken);
    const row = await this.db('oauth_refresh_tokens').where('token_hash', hash).first();
    if (!row) throw invalidGrant('The refresh token is invalid.');
    if (row.client_id !== CLIENT_ID) throw invalidGrant('The token was issued to another client.');
    if (row.revoked_at) throw invalidGrant('The refresh token was revoked.');
    if (row.used_at) return this.reuse(row);
    if (row.expires_at <= this.at()) throw invalidGrant('The refresh token has expired.');
    const grant = { adminId: row.admin_id, sessionId: row.session_id, familyId: row.family_id };
    await this.assertGrantAlive(grant);
    const rotated = await this.db('oauth_refresh_tokens')
      .where('token_hash', hash)
      .whereNull('used_at')
      .whereNull('revoked_at')
      .update({ used_at: this.at() });
    // Lost a race with another exchange of the same token: that is reuse too.
    if (!rotated) return this.reuse(row);
    return this.issue(grant);
  }

  /** RFC 7009: access token -> that token; refresh token -> its whole grant. Unknown: nothing. */
  async revoke(token: string): Promise<void> {
    const now = this.at();
    if (token.split('.').length === 3) {
      const jti = await signedJti(this.keys, token);
      if (jti)
        await this.db('oauth_access_tokens')
          .where('jti', jti)
          .whereNull('revoked_at')
          .update({ revoked_at: now });
      return;
    }
    const row = await this.db('oauth_refresh_tokens').where('token_hash', sha256(token)).first();
    if (row) await this.revokeFamily(row.family_id);
  }

  /** Deletes expired codes and tokens (nothing can use them any more). */
  async purgeExpired(): Promise<void> {
    const now = this.at();
    await this.db('oauth_codes').where('expires_at', '<', now).delete();
    await this.db('oauth_access_tokens').where('expires_at', '<', now).delete();
    await this.db('oauth_refresh_tokens').where('expires_at', '<', now).delete();
  }

  private async reuse(row: any): Promise<never> {
    // Presenting an exchanged refresh token means it leaked: every access and refresh token of
    // this administrator and client is revoked, on every device.
    const now = this.at();
    const scope = { admin_id: row.admin_id, client_id: row.client_id };
    await this.db.transaction(async (tx) => {
      await tx('oauth_refresh_tokens')
        .where(scope)
        .whereNull('revoked_at')
        .update({ revoked_at: now });
      await tx('oauth_access_tokens')
        .where(scope)
        .whereNull('revoked_at')
        .update({ revoked_at: now });
    });
    throw invalidGrant('The refresh token was already used; all tokens of this grant are revoked.');
  }

  private async revokeFamily(familyId: string, tx: Tx = this.db): Promise<void> {
    const now = this.at();
    await tx('oauth_refresh_tokens')
      .where('family_id', familyId)
      .whereNull('revoked_at')
      .update({ revoked_at: now });
    await tx('oauth_access_tokens')
      .where('family_id', familyId)
      .whereNull('revoked_at')
      .update({ revoked_at: now });
  }

  /** A grant dies with its browser session's sign-out and with its administrator. */
  private async assertGrantAlive(grant: Grant): Promise<void> {
    const session = await this.db('admin_sessions')
      .join('administrators as a', 'a.id', 'admin_sessions.admin_id')
      .where('admin_sessions.id', grant.sessionId)
      .first('admin_sessions.ended_at', 'a.status');
    if (!session || session.ended_at) throw invalidGrant('The administrator signed out.');
    if (session.status !== 'active') throw invalidGrant('The administrator is no longer active.');
  }

  private async issue(grant: Grant): Promise<TokenResponse> {
    const access = await signAccessToken(this.keys, this.clock, this.issuer, grant.adminId);
    const refreshToken = random();
    const base = {
      family_id: grant.familyId,
      admin_id: grant.adminId,
      client_id: CLIENT_ID,
      session_id: grant.sessionId,
      created_at: this.at(),
    };
    await this.db.transaction(async (tx) => {
      await tx('oauth_access_tokens').insert({
        ...base,
        jti: access.jti,
        expires_at: access.expiresAt.toISOString(),
      });
      await tx('oauth_refresh_tokens').insert({
        ...base,
        token_hash: sha256(refreshToken),
        expires_at: this.at(REFRESH_TOKEN_SECONDS),
      });
    });
    return {
      token_type: 'Bearer',
      access_token: access.token,
      expires_in: ACCESS_TOKEN_SECONDS,
      refresh_token: refreshToken,
    };
  }
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}
