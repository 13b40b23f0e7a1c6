// v1/v2 authentication: the school API key in `Authorization`, `Bearer ` optional (specification:
// Authentication, v1 and v2). v3 secrets, unknown and missing keys are all 401; the account must
// be usable, with the same codes as v3 so operators see one vocabulary.
import { assertActiveStatus } from '../../domain/accounts/active.ts';
import type { Context } from 'koa';
import type { Db } from '../../db/knex.ts';
import { AppError } from '../../errors.ts';
import { findLegacyKey, type LegacyKeyOwner } from '../../domain/legacy/keys.ts';

export interface LegacyAuth {
  accountId: number;
}

function presentedKey(ctx: Context): string {
  const values = ctx.req.headersDistinct['authorization'] ?? [];
  // Two Authorization headers are ambiguous: refuse rather than pick one.
  if (values.length !== 1) throw new AppError('unauthenticated');
  return values[0]!
    .trim()
    .replace(/^Bearer\s+/i, '')
    .trim();
}

export async function authenticateLegacy(ctx: Context, db: Db): Promise<LegacyAuth> {
  const key = presentedKey(ctx);
  let owner: LegacyKeyOwner | null;
  try {
    owner = await findLegacyKey(db, key);
  } catch {
    // Fail closed: a key that cannot be checked serves nothing.
    throw new AppError('credential_state_unverifiable');
  }
  if (!owner) throw new AppError('unauthenticated');
  assertActiveStatus(owner.accountStatus);
  return { accountId: owner.accountId };
}
