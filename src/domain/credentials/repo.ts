import { newRevision } from '../shared/ids.ts';
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Tx } from '../../db/knex.ts';
import { bool, insertId, json } from '../../db/dialect.ts';
import { execute, firstRow } from '../../db/statements.ts';
import type { AccountInfo, AuthMode, Credential } from './types.ts';

export type { AccountInfo, AuthMode, Credential, CredentialStatus } from './types.ts';

export interface NewCredential {
  accountId: number;
  name: string;
  environment: 'live' | 'test';
  authMode: AuthMode;
  permissions: string[];
  secretHash: string;
  secretLast4: string;
  issuerId: number | null;
  expiresAt: string | null;
  revision: string;
  now: string;
}

/** Which states occur among a credential's issuers, and the earliest expires_at among them. */
export interface ChainState {
  revoked: boolean;
  suspended: boolean;
  expired: boolean;
  expiresAt: string | null;
}

const map = (r: any): Credential => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  name: r.name,
  environment: r.environment,
  status: r.status,
  authMode: r.auth_mode,
  permissions: json<string[]>(r.permissions, []),
  secretLast4: r.secret_last4,
  issuerId: r.issuer_id === null ? null : Number(r.issuer_id),
  expiresAt: r.expires_at,
  lastUsedAt: r.last_used_at,
  revokedAt: r.revoked_at,
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const byCreation = keyset('created_at', 'id');
const credentialPages = pages({
  list: 'credentials',
  sorts: { '-created_at': byCreation.desc },
  map,
});

export const credentialsRepo = {
  async findBySecretHash(
    { tx }: { tx: Tx },
    hash: string,
  ): Promise<{ credential: Credential; account: AccountInfo } | null> {
    // Every v3 request runs this: on SQLite a kept row, read again only after a write to the
    // credentials or accounts tables (see src/db/reader.ts).
    const r = await firstRow<any>(
      { tx },
      'SELECT c.*, a.sandbox AS account_sandbox, a.status AS account_status FROM credentials c ' +
        'JOIN accounts a ON a.id = c.account_id WHERE c.secret_hash = ?',
      [hash],
      { stable: true },
    );
    if (!r) return null;
    return {
      credential: map(r),
      account: {
        id: Number(r.account_id),
        sandbox: bool(r.account_sandbox),
        status: r.account_status,
      },
    };
  },

  /**
   * The worst state along an issuer chain: the issuer, its issuer, and so on to a bootstrap
   * credential. One row, so SQLite keeps it with the credential lookup (see firstRow). UNION, not
   * UNION ALL: it ends even on a cycle no API can make.
   */
  async chainState({ tx }: { tx: Tx }, issuerId: number): Promise<ChainState> {
    const r = await firstRow<any>(
      { tx },
      'WITH RECURSIVE chain(id, issuer_id, status, expires_at) AS (' +
        'SELECT id, issuer_id, status, expires_at FROM credentials WHERE id = ? UNION ' +
        'SELECT c.id, c.issuer_id, c.status, c.expires_at FROM credentials c ' +
        'JOIN chain ON c.id = chain.issuer_id) ' +
        "SELECT SUM(CASE WHEN status = 'revoked' THEN 1 ELSE 0 END) AS revoked, " +
        "SUM(CASE WHEN status = 'suspended' THEN 1 ELSE 0 END) AS suspended, " +
        "SUM(CASE WHEN status = 'expired' THEN 1 ELSE 0 END) AS expired, " +
        'MIN(expires_at) AS expires_at FROM chain',
      [issuerId],
      { stable: true },
    );
    return {
      revoked: Number(r?.revoked ?? 0) > 0,
      suspended: Number(r?.suspended ?? 0) > 0,
      expired: Number(r?.expired ?? 0) > 0,
      expiresAt: r?.expires_at ?? null,
    };
  },

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Credential | null> {
    const r = await tx('credentials').where({ account_id: accountId, id }).first();
    return r ? map(r) : null;
  },

  /** One page of the account's credentials, newest first. */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    f: { status?: string },
    p: PageParams,
  ) {
    const query = credentialsRepo.listQuery({ tx }, accountId, f.status);
    return credentialPages(query, cursors, { ...p, of: [accountId], filters: f });
  },

  listQuery({ tx }: { tx: Tx }, accountId: number, status: string | undefined) {
    const q = tx('credentials').where('account_id', accountId);
    if (status) q.where('status', status);
    return q.select('*');
  },

  map,

  async insert({ tx }: { tx: Tx }, c: NewCredential): Promise<number> {
    return insertId({ tx }, 'credentials', {
      account_id: c.accountId,
      name: c.name,
      secret_hash: c.secretHash,
      secret_last4: c.secretLast4,
      environment: c.environment,
      status: 'active',
      auth_mode: c.authMode,
      permissions: JSON.stringify(c.permissions),
      issuer_id: c.issuerId,
      expires_at: c.expiresAt,
      revision: c.revision,
      created_at: c.now,
      updated_at: c.now,
    });
  },

  /**
   * Renames or re-permissions the credential (a new revision), only if the row still has the
   * revision the caller read; returns rows changed.
   */
  updateIf(
    { tx }: { tx: Tx },
    id: number,
    revision: string,
    changes: { name?: string; permissions?: string[] },
    now: string,
  ): Promise<number> {
    const row: Record<string, unknown> = { revision: newRevision(), updated_at: now };
    if (changes.name !== undefined) row.name = changes.name;
    if (changes.permissions !== undefined) row.permissions = JSON.stringify(changes.permissions);
    return tx('credentials').where({ id, revision }).update(row);
  },

  /** Revokes the credential, only if the row still has the revision the caller read. */
  revokeIf({ tx }: { tx: Tx }, id: number, revision: string, now: string): Promise<number> {
    return tx('credentials')
      .where({ id, revision })
      .update({ status: 'revoked', revoked_at: now, updated_at: now, revision: newRevision() });
  },

  /** Revokes every credential issued by this one, directly or down the chain. */
  revokeIssuedBy(
    { tx }: { tx: Tx },
    id: number,
    changes: { revokedAt: string; revision: string },
  ): Promise<number> {
    return execute(
      { tx },
      "UPDATE credentials SET status = 'revoked', revoked_at = ?, updated_at = ?, revision = ? " +
        "WHERE status <> 'revoked' AND id IN (WITH RECURSIVE issued(id) AS (" +
        'SELECT id FROM credentials WHERE issuer_id = ? UNION ' +
        'SELECT c.id FROM credentials c JOIN issued ON c.issuer_id = issued.id) ' +
        'SELECT id FROM issued)',
      [changes.revokedAt, changes.revokedAt, changes.revision, id],
    );
  },

  async touch({ tx }: { tx: Tx }, id: number, now: string): Promise<void> {
    await tx('credentials').where('id', id).update({ last_used_at: now });
  },

  async hasUsage({ tx }: { tx: Tx }, id: number): Promise<boolean> {
    const r = await tx('audit_entries').where('credential_id', id).first('id');
    return Boolean(r);
  },

  async remove({ tx }: { tx: Tx }, id: number): Promise<void> {
    await tx('credentials').where('issuer_id', id).update({ issuer_id: null });
    await tx('credential_administrators').where('credential_id', id).delete();
    await tx('credentials').where('id', id).delete();
  },

  async adminInAccount({ tx }: { tx: Tx }, accountId: number, adminId: number): Promise<boolean> {
    const r = await tx('administrators')
      .where({ id: adminId, account_id: accountId, status: 'active' })
      .first('id');
    return Boolean(r);
  },

  async getLink({ tx }: { tx: Tx }, credentialId: number, adminId: number) {
    return tx('credential_administrators')
      .where({ credential_id: credentialId, admin_id: adminId })
      .first();
  },

  async link(
    { tx }: { tx: Tx },
    credentialId: number,
    adminId: number,
    now: string,
  ): Promise<void> {
    await tx('credential_administrators')
      .insert({ credential_id: credentialId, admin_id: adminId, created_at: now })
      .onConflict(['credential_id', 'admin_id'])
      .ignore();
  },

  async unlink({ tx }: { tx: Tx }, credentialId: number, adminId: number): Promise<number> {
    return tx('credential_administrators')
      .where({ credential_id: credentialId, admin_id: adminId })
      .delete();
  },
};
