// A credential and the account it belongs to, as the rest of the domain sees them.

/** What a request needs to know of its account (read with its credential, in one statement). */
export interface AccountInfo {
  id: number;
  sandbox: boolean;
  status: string;
}

export type CredentialStatus = 'active' | 'suspended' | 'expired' | 'revoked';
export type AuthMode = 'autonomous' | 'both' | 'human_required';

export interface Credential {
  id: number;
  accountId: number;
  name: string;
  environment: 'live' | 'test';
  status: CredentialStatus;
  authMode: AuthMode;
  permissions: string[];
  secretLast4: string;
  issuerId: number | null;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  revision: string;
  createdAt: string;
  updatedAt: string;
}
