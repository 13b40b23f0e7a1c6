// v3 authentication (specification: Authentication). Autonomous mode: the credential secret as
// bearer. Human mode: X-API-Key + an administrator's access token, checked in the specification's
// order; never a fallback to autonomous mode. The User-Agent never decides anything.
import { assertActiveStatus } from '../../domain/accounts/active.ts';
import type { Context } from 'koa';
import { AppError } from '../../errors.ts';
import type { AuthContext, AccountInfo, HumanContext } from '../../domain/credentials/auth.ts';
import type { Credential } from '../../domain/credentials/repo.ts';
import type { CredentialsService } from '../../domain/credentials/service.ts';
import { SECRET_PATTERN } from '../../domain/credentials/secrets.ts';

/** Steps 3 to 5 of a human-mode request; issue #3's OAuth server provides it. */
export interface HumanVerifier {
  verify(accessToken: string, credential: Credential, account: AccountInfo): Promise<HumanContext>;
}

function bearerOf(header: string | undefined): string | undefined {
  const m = header?.match(/^Bearer[ ]+(\S+)\s*$/i);
  return m?.[1];
}

async function lookup(credentials: CredentialsService, secret: string) {
  try {
    return await credentials.findBySecret(secret);
  } catch {
    // Fail closed: without a verified credential state nothing is served.
    throw new AppError('credential_state_unverifiable');
  }
}

function assertUsable(credentials: CredentialsService, c: Credential, account: AccountInfo): void {
  const status = credentials.effectiveStatus(c);
  if (status === 'revoked') throw new AppError('credential_revoked');
  if (status === 'suspended') throw new AppError('credential_suspended');
  if (status === 'expired') throw new AppError('credential_expired');
  assertActiveStatus(account.status);
}

export async function authenticate(
  ctx: Context,
  credentials: CredentialsService,
  human: HumanVerifier | null,
): Promise<AuthContext> {
  const authorization = ctx.req.headersDistinct['authorization'] ?? [];
  const apiKeys = ctx.req.headersDistinct['x-api-key'] ?? [];
  if (authorization.length > 1 || apiKeys.length > 1) throw new AppError('ambiguous_credentials');
  const bearer = bearerOf(authorization[0]);

  if (apiKeys.length === 1) {
    // Human mode, step 1: the credential is validated before Authorization is examined.
    const found = await lookup(credentials, apiKeys[0]!.trim());
    if (!found) throw new AppError('unauthenticated');
    assertUsable(credentials, found.credential, found.account);
    if (!bearer) throw new AppError('human_context_required');
    if (SECRET_PATTERN.test(bearer)) throw new AppError('ambiguous_credentials');
    if (found.credential.authMode === 'autonomous') throw new AppError('human_mode_not_allowed');
    if (!human) throw new AppError('invalid_access_token');
    const context = await human.verify(bearer, found.credential, found.account);
    return { account: found.account, credential: found.credential, human: context };
  }

  if (!bearer) throw new AppError('unauthenticated');
  const found = await lookup(credentials, bearer);
  if (!found) throw new AppError('unauthenticated');
  assertUsable(credentials, found.credential, found.account);
  if (found.credential.authMode === 'human_required') throw new AppError('human_context_required');
  return { account: found.account, credential: found.credential, human: null };
}
