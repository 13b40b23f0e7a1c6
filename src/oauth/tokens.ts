// Authorization codes, token issuance, refresh rotation with reuse detection, and revocation.
// Codes and refresh tokens are random and stored as SHA-256 hashes; access tokens by jti.
import crypto from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Db, Tx } from '../db/knex.ts';
import { transaction } from '../db/tx.ts';
import { sha256 } from '../domain/shared/ids.ts';
import { lockAdministrator } from './admin-lock.ts';
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
  readonly error: string;
  readonly description: string;
  readonly status: number;
  constructor(error: string, description: string, status = 400) {
    super(error);
    this.error = error;
    this.description = description;
    this.status = status;
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

interface NewTokens {
  access: Awaited<ReturnType<typeof signAccessToken>>;
  refreshHash: string;
  response: TokenResponse;
}

const random = () => crypto.randomBytes(32).toString('base64url');
const invalidGrant = (why: string) => new OAuthError('invalid_grant', why);

export class TokenService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly keys: SigningKeys;
  private readonly issuer: string;
  constructor(db: Db, clock: Clock, keys: SigningKeys, issuer: string) {
    this.db = db;
    this.clock = clock;
    this.keys = keys;
    this.issuer = issuer;
  }

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
    const problem = codeProblem(row, input, this.at());
    const grant = { adminId: row.admin_id, sessionId: row.session_id, familyId: row.family_id };
    const tokens = await this.newTokens(grant);
    const outcome = await transaction(this.db, async (tx) => {
      await lockAdministrator({ tx }, grant.adminId);
      // Used up before any other check: a failed attempt (wrong verifier) also burns the code.
      const consumed = await tx('oauth_codes')
        .where('code_hash', hash)
        .whereNull('used_at')
        .update({ used_at: this.at() });
      if (!consumed) return 'used';
      const refused = problem ?? (await this.grantEnded(grant, { tx }));
      if (refused) return refused;
      await this.store({ tx }, grant, tokens);
      return 'issued';
    });
    if (outcome === 'used') {
      // RFC 6749 4.1.2: a code used twice revokes what was issued from it. The first use stored
      // its tokens in the transaction that used the code up, so they are in the family by now.
      await this.revokeFamily(row.family_id, row.admin_id);
      throw invalidGrant('The authorization code was already used.');
    }
    if (outcome !== 'issued') throw outcome;
    return tokens.response;
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
    const ended = await this.grantEnded(grant);
    if (ended) throw ended;
    const tokens = await this.newTokens(grant);
    const rotated = await transaction(this.db, async (tx) => {
      await lockAdministrator({ tx }, grant.adminId);
      const claimed = await tx('oauth_refresh_tokens')
        .where('token_hash', hash)
        .whereNull('used_at')
        .whereNull('revoked_at')
        .update({ used_at: this.at() });
      // Stored with the claim: whoever loses the race and revokes comes after and sees them.
      if (claimed) await this.store({ tx }, grant, tokens);
      return claimed > 0;
    });
    // Lost a race with another exchange of the same token: that is reuse too.
    if (!rotated) return this.reuse(row);
    return tokens.response;
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
    if (row) await this.revokeFamily(row.family_id, row.admin_id);
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
    await this.revokeWhere(row.admin_id, { admin_id: row.admin_id, client_id: row.client_id });
    throw invalidGrant('The refresh token was already used; all tokens of this grant are revoked.');
  }

  private revokeFamily(familyId: string, adminId: number): Promise<void> {
    return this.revokeWhere(adminId, { family_id: familyId });
  }

  /**
   * Revokes the matching access and refresh tokens under the administrator's lock: tokens being
   * issued at this moment (under the same lock) are stored before, or see the revocation.
   */
  private async revokeWhere(adminId: number, scope: Record<string, unknown>): Promise<void> {
    const now = this.at();
    await transaction(this.db, async (tx) => {
      await lockAdministrator({ tx }, adminId);
      await tx('oauth_refresh_tokens')
        .where(scope)
        .whereNull('revoked_at')
        .update({ revoked_at: now });
      await tx('oauth_access_tokens')
        .where(scope)
        .whereNull('revoked_at')
        .update({ revoked_at: now });
    });
  }

  /** A grant dies with its browser session's sign-out and with its administrator. */
  private async grantEnded(
    grant: Grant,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<OAuthError | undefined> {
    const session = await tx('admin_sessions')
      .join('administrators as a', 'a.id', 'admin_sessions.admin_id')
      .where('admin_sessions.id', grant.sessionId)
      .first('admin_sessions.ended_at', 'a.status');
    if (!session || session.ended_at) return invalidGrant('The administrator signed out.');
    if (session.status !== 'active') return invalidGrant('The administrator is no longer active.');
    return undefined;
  }

  /** Signed before the transaction that stores them: it holds a lock (SQLite: the database). */
  private async newTokens(grant: Grant): Promise<NewTokens> {
    const access = await signAccessToken(this.keys, this.clock, this.issuer, grant.adminId);
    const refreshToken = random();
    return {
      access,
      refreshHash: sha256(refreshToken),
      response: {
        token_type: 'Bearer',
        access_token: access.token,
        expires_in: ACCESS_TOKEN_SECONDS,
        refresh_token: refreshToken,
      },
    };
  }

  private async store({ tx }: { tx: Tx }, grant: Grant, tokens: NewTokens): Promise<void> {
    const base = {
      family_id: grant.familyId,
      admin_id: grant.adminId,
      client_id: CLIENT_ID,
      session_id: grant.sessionId,
      created_at: this.at(),
    };
    await tx('oauth_access_tokens').insert({
      ...base,
      jti: tokens.access.jti,
      expires_at: tokens.access.expiresAt.toISOString(),
    });
    await tx('oauth_refresh_tokens').insert({
      ...base,
      token_hash: tokens.refreshHash,
      expires_at: this.at(REFRESH_TOKEN_SECONDS),
    });
  }
}

/** What is wrong with this use of a code, found before the code is used up (and thrown after). */
function codeProblem(
  row: any,
  input: { codeVerifier: string; redirectUri: string },
  now: string,
): OAuthError | undefined {
  if (row.expires_at <= now) return invalidGrant('The authorization code has expired.');
  if (row.client_id !== CLIENT_ID) return invalidGrant('The code was issued to another client.');
  if (row.redirect_uri !== input.redirectUri)
    return invalidGrant('redirect_uri differs from the authorization request.');
  const challenge = crypto.createHash('sha256').update(input.codeVerifier).digest('base64url');
  if (!safeEqual(challenge, row.code_challenge))
    return invalidGrant('code_verifier does not match the code_challenge.');
  return undefined;
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}
