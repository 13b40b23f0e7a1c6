// Steps 3 to 5 of a human-mode request (steps 1 and 2 are in src/http/v3/authenticate.ts):
// 3 the bearer is a valid, unrevoked access token of this server (401 invalid_access_token; an
//   ID-token-shaped JWT is 401 ambiguous_credentials), 4 its administrator belongs to the
//   credential's account (403 tenant_mismatch), 5 the administrator is active, still signed in
//   where the token was granted, and linked to the credential (403 admin_not_eligible).
import type { Clock } from '../clock.ts';
import type { Db } from '../db/knex.ts';
import { AppError, isAppError } from '../errors.ts';
import type { AccountInfo, HumanContext } from '../domain/credentials/auth.ts';
import type { Credential } from '../domain/credentials/repo.ts';
import { credentialsRepo } from '../domain/credentials/repo.ts';
import type { HumanVerifier } from '../http/v3/authenticate.ts';
import { looksLikeIdToken, peek, verifyAccessToken, type AccessClaims } from './access-token.ts';
import type { SigningKeys } from './keys.ts';

export function humanVerifier(
  db: Db,
  clock: Clock,
  keys: SigningKeys,
  issuer: string,
): HumanVerifier {
  async function step3(token: string): Promise<{ claims: AccessClaims; sessionId: number }> {
    const shape = peek(token);
    if (!shape) throw new AppError('invalid_access_token');
    if (looksLikeIdToken(shape.header, shape.claims)) throw new AppError('ambiguous_credentials');
    let claims: AccessClaims;
    try {
      claims = await verifyAccessToken(keys, clock, issuer, token);
    } catch {
      throw new AppError('invalid_access_token');
    }
    const row = await db('oauth_access_tokens').where('jti', claims.jti).first();
    if (!row || row.revoked_at || String(row.admin_id) !== claims.sub)
      throw new AppError('invalid_access_token');
    return { claims, sessionId: row.session_id };
  }

  async function verify(
    token: string,
    credential: Credential,
    account: AccountInfo,
  ): Promise<HumanContext> {
    const { claims, sessionId } = await step3(token);
    const adminId = Number(claims.sub);
    const admin = await db('administrators').where('id', adminId).first('account_id', 'status');
    if (!admin) throw new AppError('admin_not_eligible');
    if (Number(admin.account_id) !== account.id) throw new AppError('tenant_mismatch');
    if (admin.status !== 'active') throw new AppError('admin_not_eligible');
    const session = await db('admin_sessions').where('id', sessionId).first('ended_at');
    if (!session || session.ended_at) throw new AppError('admin_not_eligible');
    const link = await credentialsRepo.getLink({ tx: db }, credential.id, adminId);
    if (!link) throw new AppError('admin_not_eligible');
    return {
      adminId,
      expiresAt: new Date(claims.exp * 1000).toISOString(),
      eligibleSince: link.created_at,
    };
  }

  return {
    async verify(token, credential, account) {
      try {
        return await verify(token, credential, account);
      } catch (err) {
        // Fail closed: if the token's state cannot be read, nothing is served (503).
        if (isAppError(err)) throw err;
        throw new AppError('credential_state_unverifiable');
      }
    },
  };
}
