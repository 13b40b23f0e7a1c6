// Who is calling: the credential, its account, and in human mode the administrator.
import type { AccountInfo, Credential } from './types.ts';

export type { AccountInfo };

export interface HumanContext {
  adminId: number;
  expiresAt: string;
  eligibleSince: string;
}

export interface AuthContext {
  account: AccountInfo;
  credential: Credential;
  human: HumanContext | null;
}

export function hasPermission(granted: readonly string[], needed: string): boolean {
  return granted.includes('*') || granted.includes(needed);
}
