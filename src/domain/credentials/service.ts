// Credential governance: delegation (never more than the issuer has), revocation, removal of
// unused credentials, administrator links. Also the lookup the v3 pipeline authenticates with.
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { AppError } from '../../errors.ts';
import { hasPermission, type AuthContext, type AccountInfo } from '../auth.ts';
import { newRevision } from '../shared/ids.ts';
import { assertRevision } from '../shared/revision.ts';
import { credentialsRepo as repo, type AuthMode, type Credential } from './repo.ts';
import { hashSecret, newSecret, SECRET_PATTERN } from './secrets.ts';

export interface CreateCredentialInput {
  name: string;
  permissions: string[];
  auth_mode?: AuthMode;
  expires_at?: string;
}

const TOUCH_EVERY_MS = 60_000;

export class CredentialsService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /** Status as the caller sees it: an active credential past expires_at is expired. */
  effectiveStatus(c: Credential): Credential['status'] {
    if (c.status === 'active' && c.expiresAt && c.expiresAt <= this.clock.now().toISOString()) {
      return 'expired';
    }
    return c.status;
  }

  /** Looks a secret up; null when the format is wrong or nothing matches. Throws if the store fails. */
  async findBySecret(
    secret: string,
  ): Promise<{ credential: Credential; account: AccountInfo } | null> {
    if (!SECRET_PATTERN.test(secret)) return null;
    return repo.findBySecretHash(this.db, hashSecret(secret));
  }

  /** last_used_at is refreshed at most once a minute, so reads stay reads. */
  async touch(c: Credential): Promise<void> {
    const now = this.clock.now();
    if (c.lastUsedAt && now.getTime() - Date.parse(c.lastUsedAt) < TOUCH_EVERY_MS) return;
    await repo.touch(this.db, c.id, now.toISOString());
  }

  // Every read inside a write uses the write's transaction: SQLite has one connection.
  async get(auth: AuthContext, id: number | null, tx: Tx = this.db): Promise<Credential> {
    const c = id === null ? null : await repo.get(tx, auth.account.id, id);
    if (!c) throw new AppError('not_found');
    return c;
  }

  listQuery(auth: AuthContext, status: string | undefined) {
    return repo.listQuery(this.db, auth.account.id, status);
  }

  map(row: Record<string, unknown>): Credential {
    return repo.map(row);
  }

  private assertDelegable(issuer: Credential, requested: string[]): void {
    const excess = requested.filter(
      (p) =>
        !hasPermission(issuer.permissions, p) || (p === '*' && !issuer.permissions.includes('*')),
    );
    if (excess.length) {
      throw new AppError('delegation_limit_exceeded', {
        details: excess.map((p) => ({
          field: 'permissions',
          code: 'delegation_limit_exceeded',
          message: p,
          reason: 'issuer_lacks_permission',
        })),
      });
    }
  }

  async create(
    auth: AuthContext,
    input: CreateCredentialInput,
    opts: { tx?: Tx } = {},
  ): Promise<{ credential: Credential; secret: string }> {
    this.assertDelegable(auth.credential, input.permissions);
    const now = this.clock.now().toISOString();
    if (input.expires_at && new Date(input.expires_at).toISOString() <= now) {
      throw new AppError('validation_failed', {
        details: [
          { field: 'expires_at', code: 'too_small', message: 'expires_at must be in the future' },
        ],
      });
    }
    const tx = opts.tx ?? this.db;
    const { secret, hash, last4 } = newSecret(auth.credential.environment);
    const id = await repo.insert(tx, {
      accountId: auth.account.id,
      name: input.name,
      environment: auth.credential.environment,
      authMode: input.auth_mode ?? 'autonomous',
      permissions: input.permissions,
      secretHash: hash,
      secretLast4: last4,
      issuerId: auth.credential.id,
      expiresAt: input.expires_at ? new Date(input.expires_at).toISOString() : null,
      revision: newRevision(),
      now,
    });
    return { credential: (await repo.get(tx, auth.account.id, id))!, secret };
  }

  async update(
    auth: AuthContext,
    id: number | null,
    input: { name?: string; permissions?: string[] },
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<Credential> {
    const tx = opts.tx ?? this.db;
    const c = await this.get(auth, id, tx);
    if (c.status === 'revoked') throw new AppError('credential_revoked', { status: 422 });
    assertRevision(ifMatch, c.revision);
    if (input.permissions) this.assertDelegable(auth.credential, input.permissions);
    const changes: Record<string, unknown> = {
      revision: newRevision(),
      updated_at: this.clock.now().toISOString(),
    };
    if (input.name !== undefined) changes.name = input.name;
    if (input.permissions !== undefined) changes.permissions = JSON.stringify(input.permissions);
    // The revision read is part of the write, so a concurrent change is a 412, never lost.
    if (!(await repo.updateIf(tx, c.id, c.revision, changes)))
      throw new AppError('revision_mismatch');
    return (await repo.get(tx, auth.account.id, c.id))!;
  }

  async revoke(auth: AuthContext, id: number | null, opts: { tx?: Tx } = {}): Promise<Credential> {
    const tx = opts.tx ?? this.db;
    const c = await this.get(auth, id, tx);
    if (c.status === 'revoked') throw new AppError('credential_revoked', { status: 422 });
    const now = this.clock.now().toISOString();
    const changes = {
      status: 'revoked',
      revoked_at: now,
      updated_at: now,
      revision: newRevision(),
    };
    if (!(await repo.updateIf(tx, c.id, c.revision, changes))) {
      // Changed since it was read; a concurrent revocation makes this one a repeat.
      const current = await this.get(auth, id, tx);
      if (current.status === 'revoked') throw new AppError('credential_revoked', { status: 422 });
      throw new AppError('revision_mismatch');
    }
    return (await repo.get(tx, auth.account.id, c.id))!;
  }

  async remove(auth: AuthContext, id: number | null, opts: { tx?: Tx } = {}): Promise<void> {
    const tx = opts.tx ?? this.db;
    const c = await this.get(auth, id, tx);
    if (c.id === auth.credential.id || c.lastUsedAt || (await repo.hasUsage(tx, c.id))) {
      throw new AppError('credential_not_removable');
    }
    await repo.remove(tx, c.id);
  }

  async linkAdmin(
    auth: AuthContext,
    id: number | null,
    adminId: number | null,
    opts: { tx?: Tx } = {},
  ) {
    const tx = opts.tx ?? this.db;
    const c = await this.get(auth, id, tx);
    if (c.status === 'revoked') throw new AppError('credential_revoked', { status: 422 });
    if (adminId === null || !(await repo.adminInAccount(tx, auth.account.id, adminId))) {
      throw new AppError('not_found');
    }
    await repo.link(tx, c.id, adminId, this.clock.now().toISOString());
    const link = await repo.getLink(tx, c.id, adminId);
    return { credentialId: c.id, adminId, createdAt: link.created_at as string };
  }

  async unlinkAdmin(
    auth: AuthContext,
    id: number | null,
    adminId: number | null,
    opts: { tx?: Tx } = {},
  ) {
    const tx = opts.tx ?? this.db;
    const c = await this.get(auth, id, tx);
    if (adminId === null || (await repo.unlink(tx, c.id, adminId)) === 0)
      throw new AppError('not_found');
  }
}
