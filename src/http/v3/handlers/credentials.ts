import type { components } from '../../../../generated/types.ts';
import type { AuthContext } from '../../../domain/credentials/auth.ts';
import type { Credential } from '../../../domain/credentials/repo.ts';
import type { CredentialsService } from '../../../domain/credentials/service.ts';
import { fromId, toId } from '../../../domain/shared/ids.ts';
import { etag } from '../../../domain/shared/revision.ts';
import type { Handlers } from './types.ts';

type CredentialOut = components['schemas']['Credential'];

export function presentCredential(
  c: Credential,
  status: Credential['status'],
  human: AuthContext['human'] = null,
): CredentialOut {
  return {
    object: 'credential',
    id: String(c.id),
    name: c.name,
    environment: c.environment,
    status,
    auth_mode: c.authMode,
    permissions: c.permissions,
    secret_last4: c.secretLast4,
    issuer_id: toId(c.issuerId),
    human: human
      ? {
          admin_id: String(human.adminId),
          expires_at: human.expiresAt,
          eligible_since: human.eligibleSince,
        }
      : null,
    expires_at: c.expiresAt,
    last_used_at: c.lastUsedAt,
    revoked_at: c.revokedAt,
    revision: c.revision,
    created_at: c.createdAt,
    updated_at: c.updatedAt,
  };
}

type CredentialOps =
  | 'getCurrentCredential'
  | 'listCredentials'
  | 'createCredential'
  | 'getCredential'
  | 'updateCredential'
  | 'deleteCredential'
  | 'revokeCredential'
  | 'linkCredentialAdministrator'
  | 'unlinkCredentialAdministrator';

export function credentialHandlers(s: CredentialsService): Pick<Handlers, CredentialOps> {
  const show = (c: Credential) => presentCredential(c, s.effectiveStatus(c));
  return {
    async getCurrentCredential({ auth }) {
      const c = auth.credential;
      return {
        status: 200,
        body: { data: presentCredential(c, s.effectiveStatus(c), auth.human) },
      };
    },
    async listCredentials({ auth, query }) {
      const page = await s.list(auth, query);
      return { status: 200, body: { data: page.rows.map(show), page: page.page } };
    },
    async createCredential({ auth, body, tx }) {
      const { credential, secret } = await s.create(auth, body, { tx });
      // Shown once: a replay of this request must never return the secret again.
      return { status: 201, body: { data: { ...show(credential), secret } }, replayable: false };
    },
    async getCredential({ auth, params }) {
      const c = await s.get(auth, fromId(params.credential_id));
      return { status: 200, body: { data: show(c) }, headers: { ETag: etag(c.revision) } };
    },
    async updateCredential({ auth, params, body, ifMatch, tx }) {
      const c = await s.update(auth, fromId(params.credential_id), body, ifMatch, { tx });
      return { status: 200, body: { data: show(c) }, headers: { ETag: etag(c.revision) } };
    },
    async deleteCredential({ auth, params, tx }) {
      await s.remove(auth, fromId(params.credential_id), { tx });
      return { status: 204 };
    },
    async revokeCredential({ auth, params, tx }) {
      const c = await s.revoke(auth, fromId(params.credential_id), { tx });
      return { status: 200, body: { data: show(c) } };
    },
    async linkCredentialAdministrator({ auth, params, tx }) {
      const link = await s.linkAdmin(auth, fromId(params.credential_id), fromId(params.admin_id), {
        tx,
      });
      return {
        status: 200,
        body: {
          data: {
            object: 'credential_administrator',
            credential_id: String(link.credentialId),
            admin_id: String(link.adminId),
            created_at: link.createdAt,
          },
        },
      };
    },
    async unlinkCredentialAdministrator({ auth, params, tx }) {
      await s.unlinkAdmin(auth, fromId(params.credential_id), fromId(params.admin_id), { tx });
      return { status: 204 };
    },
  };
}
