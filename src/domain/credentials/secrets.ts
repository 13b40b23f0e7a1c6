import { randomBase62, sha256 } from '../shared/ids.ts';

/** `sch_live_` or `sch_test_` + 32 random bytes in base62 (43 characters). */
export const SECRET_PATTERN = /^sch_(live|test)_[0-9A-Za-z]{43}$/;

export function newSecret(environment: 'live' | 'test'): {
  secret: string;
  hash: string;
  last4: string;
} {
  const secret = `sch_${environment}_${randomBase62(32)}`;
  return { secret, hash: sha256(secret), last4: secret.slice(-4) };
}

export const hashSecret = (secret: string): string => sha256(secret);
