// Accounts, administrators and legacy keys: the bootstrap side of the schema.
import { newRevision } from '../shared/ids.ts';
import type { Tx } from '../../db/knex.ts';
import { insertId } from '../../db/dialect.ts';
import { isPostgres } from '../../db/engine.ts';

export const accountsRepo = {
  async any({ tx }: { tx: Tx }): Promise<boolean> {
    return Boolean(await tx('accounts').first('id'));
  },

  async exists({ tx }: { tx: Tx }, id: number): Promise<boolean> {
    return Boolean(await tx('accounts').where('id', id).first('id'));
  },

  insert(
    { tx }: { tx: Tx },
    row: { name: string; sandbox: boolean; replicaOf: number | null; now: string },
  ) {
    return insertId({ tx }, 'accounts', {
      name: row.name,
      sandbox: row.sandbox,
      status: 'active',
      replica_of: row.replicaOf,
      created_at: row.now,
    });
  },

  async status({ tx }: { tx: Tx }, id: number): Promise<string | null> {
    const r = await tx('accounts').where('id', id).first('status');
    return r ? String(r.status) : null;
  },

  /**
   * The status, held until the transaction ends on PostgreSQL (a change of it waits): what acts
   * on it cannot interleave with the change (SQLite's write transactions are serial already).
   */
  async statusForShare({ tx }: { tx: Tx }, id: number): Promise<string | null> {
    const q = tx('accounts').where('id', id).first('status');
    const r = await (isPostgres(tx) ? q.forShare() : q);
    return r ? String(r.status) : null;
  },

  setStatus({ tx }: { tx: Tx }, id: number, status: string): Promise<number> {
    return tx('accounts').where('id', id).update({ status });
  },

  /** A new status (and revision); revoking also dates the revocation. */
  setCredentialStatus(
    { tx }: { tx: Tx },
    id: number,
    status: string,
    now: string,
  ): Promise<number> {
    const changes: Record<string, unknown> = { status, updated_at: now, revision: newRevision() };
    if (status === 'revoked') changes.revoked_at = now;
    return tx('credentials').where('id', id).update(changes);
  },

  async credentialAccount({ tx }: { tx: Tx }, id: number): Promise<number | null> {
    const r = await tx('credentials').where('id', id).first('account_id');
    return r ? Number(r.account_id) : null;
  },
};

export const adminsRepo = {
  insert(
    { tx }: { tx: Tx },
    row: {
      accountId: number;
      email: string;
      passwordHash: string;
      totpSecret: string;
      now: string;
    },
  ) {
    return insertId({ tx }, 'administrators', {
      account_id: row.accountId,
      email: row.email,
      email_lower: row.email.toLowerCase(),
      password_hash: row.passwordHash,
      totp_secret: row.totpSecret,
      status: 'active',
      created_at: row.now,
    });
  },

  async accountOf({ tx }: { tx: Tx }, id: number): Promise<number | null> {
    const r = await tx('administrators').where('id', id).first('account_id');
    return r ? Number(r.account_id) : null;
  },

  /** Marks the administrator removed and drops every credential link, atomically. */
  remove({ tx }: { tx: Tx }, id: number): Promise<number> {
    return tx.transaction(async (t) => {
      const n = await t('administrators').where('id', id).update({ status: 'removed' });
      if (n) await t('credential_administrators').where('admin_id', id).delete();
      return n;
    });
  },
};

export const legacyKeysRepo = {
  async insert({ tx }: { tx: Tx }, accountId: number, keyHash: string, now: string): Promise<void> {
    await tx('legacy_keys').insert({ account_id: accountId, key_hash: keyHash, created_at: now });
  },
};
