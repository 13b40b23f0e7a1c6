// Credential governance: delegation (never more than the issuer has), revocation, removal of
// unused credentials, administrator links. Also the lookup the v3 pipeline authenticates with.
// Managing a credential (PATCH, DELETE, revocation, administrator links) takes what issuing it
// would: every permission it holds, `*` only from `*`. A credential never outlives its issuers.
import type { CursorCodec } from '../../db/cursor.ts';
import { isPostgres, type Db, type Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { AppError, type ErrorDetail } from '../../errors.ts';
import { detailMessage } from '../../i18n/messages.ts';
import { hasPermission, type AuthContext, type AccountInfo } from './auth.ts';
import { newRevision } from '../shared/ids.ts';
import { guardedWrite } from '../shared/revision.ts';
import {
  credentialsRepo as repo,
  type AuthMode,
  type ChainState,
  type Credential,
  type CredentialStatus,
} from './repo.ts';
import { hashSecret, newSecret, SECRET_PATTERN } from './secrets.ts';
import { assertKnownPermissions } from './permissions.ts';
import { VersionedCache } from './cache.ts';

export interface CreateCredentialInput {
  name: string;
  permissions: string[];
  auth_mode?: AuthMode;
  expires_at?: string;
}

const TOUCH_EVERY_MS = 60_000;

/** How final a state is: a credential authenticates with the most final along its chain. */
const FINALITY: Record<CredentialStatus, number> = {
  active: 0,
  expired: 1,
  suspended: 2,
  revoked: 3,
};

/** Permissions in `wanted` that `holder` could not grant: any it lacks, and `*` unless it has `*`. */
function beyond(holder: Credential, wanted: readonly string[]): string[] {
  return wanted.filter(
    (p) =>
      !hasPermission(holder.permissions, p) || (p === '*' && !holder.permissions.includes('*')),
  );
}

const tooMuch = (details: ErrorDetail[]) => new AppError('delegation_limit_exceeded', { details });

const invalidExpiry = (code: string, message: string) =>
  new AppError('validation_failed', { details: [{ field: 'expires_at', code, message }] });

/** A lookup as read from the database, before the clock is applied to it. */
interface Stored {
  found: { credential: Credential; account: AccountInfo } | null;
  chain: ChainState | null;
}

export class CredentialsService {
  /** PostgreSQL only: SQLite keeps these rows in src/db/reader.ts. */
  private readonly cache: VersionedCache<Stored> | null;
  /** When this process last wrote a credential's last_used_at (cached rows keep the old one). */
  private readonly touched = new Map<number, number>();
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;

  constructor(db: Db, clock: Clock, cursors: CursorCodec) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.cache = isPostgres(db) ? new VersionedCache(db) : null;
  }

  /** Status as the caller sees it: an active credential past expires_at is expired. */
  effectiveStatus(c: Credential): Credential['status'] {
    if (c.status === 'active' && c.expiresAt && c.expiresAt <= this.clock.now().toISOString()) {
      return 'expired';
    }
    return c.status;
  }

  /**
   * Looks a secret up; null when the format is wrong or nothing matches. Throws if the store fails.
   * A delegated credential comes back with the most final state along its issuer chain, so a
   * revoked, suspended or expired issuer stops what it issued, however it got there (API, admin
   * CLI, or time). Bootstrap credentials, the common case, cost no second query; on SQLite the
   * chain's row is kept like the credential's until the next commit, on PostgreSQL both are kept
   * until the auth version moves (./cache.ts). Cached values are shared: never mutated.
   */
  async findBySecret(
    secret: string,
  ): Promise<{ credential: Credential; account: AccountInfo } | null> {
    if (!SECRET_PATTERN.test(secret)) return null;
    const hash = hashSecret(secret);
    let stored: Stored | undefined;
    if (this.cache) {
      const version = await this.cache.version();
      stored = this.cache.get(hash, version);
      if (!stored) {
        stored = await this.read(hash);
        if (stored.found) this.cache.set(hash, version, stored);
      }
    } else stored = await this.read(hash);
    const { found, chain } = stored;
    if (!found || !chain) return found;
    const status = this.chainStatus(chain);
    if (FINALITY[status] <= FINALITY[found.credential.status]) return found;
    return { ...found, credential: { ...found.credential, status } };
  }

  private async read(hash: string): Promise<Stored> {
    const found = await repo.findBySecretHash({ tx: this.db }, hash);
    if (!found || found.credential.issuerId === null) return { found, chain: null };
    return { found, chain: await repo.chainState({ tx: this.db }, found.credential.issuerId) };
  }

  private chainStatus(chain: ChainState): CredentialStatus {
    if (chain.revoked) return 'revoked';
    if (chain.suspended) return 'suspended';
    if (chain.expired || (chain.expiresAt && chain.expiresAt <= this.clock.now().toISOString()))
      return 'expired';
    return 'active';
  }

  /**
   * The credential's status as authentication would see it now, its issuers' included; null when
   * it no longer exists. Open event streams re-check their credential with it.
   */
  async currentStatus(accountId: number, id: number): Promise<CredentialStatus | null> {
    const c = await repo.get({ tx: this.db }, accountId, id);
    if (!c) return null;
    const own = this.effectiveStatus(c);
    if (c.issuerId === null) return own;
    const chain = this.chainStatus(await repo.chainState({ tx: this.db }, c.issuerId));
    return FINALITY[chain] > FINALITY[own] ? chain : own;
  }

  /** last_used_at is refreshed at most once a minute, so reads stay reads. */
  async touch(c: Credential): Promise<void> {
    const now = this.clock.now();
    const last = Math.max(c.lastUsedAt ? Date.parse(c.lastUsedAt) : 0, this.touched.get(c.id) ?? 0);
    if (last && now.getTime() - last < TOUCH_EVERY_MS) return;
    if (this.touched.size >= 10_000) this.touched.clear();
    this.touched.set(c.id, now.getTime());
    await repo.touch({ tx: this.db }, c.id, now.toISOString());
  }

  // Every read inside a write uses the write's transaction: SQLite has one connection.
  async get(
    auth: AuthContext,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<Credential> {
    const c = id === null ? null : await repo.get({ tx }, auth.account.id, id);
    if (!c) throw new AppError('not_found');
    return c;
  }

  /** A page of the account's credentials, newest first. */
  list(auth: AuthContext, q: { status?: string; limit?: number; cursor?: string }) {
    const { limit, cursor } = q;
    return repo.page(
      { tx: this.db },
      this.cursors,
      auth.account.id,
      { status: q.status },
      { limit, cursor },
    );
  }

  private assertDelegable(issuer: Credential, requested: string[]): void {
    const excess = beyond(issuer, requested);
    if (excess.length) {
      throw tooMuch(
        excess.map((p) => ({
          field: 'permissions',
          code: 'delegation_limit_exceeded',
          message: p,
          reason: 'issuer_lacks_permission',
        })),
      );
    }
  }

  /** Otherwise a narrow credential could revoke, narrow or take over a wider one. */
  private async manageable(
    auth: AuthContext,
    id: number | null,
    { tx }: { tx: Tx },
  ): Promise<Credential> {
    const c = await this.get(auth, id, { tx });
    const excess = beyond(auth.credential, c.permissions);
    if (excess.length) {
      throw tooMuch(
        excess.map((p) => ({
          code: 'delegation_limit_exceeded',
          message: p,
          reason: 'credential_holds_permission',
        })),
      );
    }
    return c;
  }

  /**
   * The stored expires_at of a new child: the one asked for, never past the issuer's. Without one
   * the child gets the issuer's, so it cannot outlive it.
   */
  private childExpiry(issuer: Credential, requested: string | undefined, now: string) {
    let asked: string | null = null;
    if (requested !== undefined) {
      const ms = Date.parse(requested);
      // The contract's date-time admits a leap second (…:60Z), which Date cannot represent.
      if (Number.isNaN(ms)) {
        throw invalidExpiry(
          'invalid_format',
          detailMessage('invalid_format', 'en-US', { format: 'date-time' }),
        );
      }
      asked = new Date(ms).toISOString();
      if (asked <= now) throw invalidExpiry('too_small', 'expires_at must be in the future');
    }
    if (issuer.expiresAt && (asked === null || asked > issuer.expiresAt)) return issuer.expiresAt;
    return asked;
  }

  async create(
    auth: AuthContext,
    input: CreateCredentialInput,
    opts: { tx?: Tx } = {},
  ): Promise<{ credential: Credential; secret: string }> {
    assertKnownPermissions(input.permissions);
    this.assertDelegable(auth.credential, input.permissions);
    const now = this.clock.now().toISOString();
    const expiresAt = this.childExpiry(auth.credential, input.expires_at, now);
    const tx = opts.tx ?? this.db;
    const { secret, hash, last4 } = newSecret(auth.credential.environment);
    const id = await repo.insert(
      { tx },
      {
        accountId: auth.account.id,
        name: input.name,
        environment: auth.credential.environment,
        authMode: input.auth_mode ?? 'autonomous',
        permissions: input.permissions,
        secretHash: hash,
        secretLast4: last4,
        issuerId: auth.credential.id,
        expiresAt,
        revision: newRevision(),
        now,
      },
    );
    return { credential: (await repo.get({ tx }, auth.account.id, id))!, secret };
  }

  async update(
    auth: AuthContext,
    id: number | null,
    input: { name?: string; permissions?: string[] },
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<Credential> {
    const tx = opts.tx ?? this.db;
    const c = await guardedWrite({
      load: async () => {
        const c = await this.manageable(auth, id, { tx });
        if (input.permissions) assertKnownPermissions(input.permissions);
        if (c.status === 'revoked') throw new AppError('credential_revoked', { status: 422 });
        return c;
      },
      ifMatch,
      check: () => {
        if (input.permissions) this.assertDelegable(auth.credential, input.permissions);
      },
      // The revision read is part of the write even without If-Match, so a concurrent change
      // is a 412, never lost.
      write: (c) => repo.updateIf({ tx }, c.id, c.revision, input, this.clock.now().toISOString()),
      lost: async () => new AppError('revision_mismatch'),
    });
    return (await repo.get({ tx }, auth.account.id, c.id))!;
  }

  async revoke(auth: AuthContext, id: number | null, opts: { tx?: Tx } = {}): Promise<Credential> {
    const tx = opts.tx ?? this.db;
    const now = this.clock.now().toISOString();
    const c = await guardedWrite({
      load: async () => {
        const c = await this.manageable(auth, id, { tx });
        if (c.status === 'revoked') throw new AppError('credential_revoked', { status: 422 });
        return c;
      },
      ifMatch: undefined,
      write: (c) => repo.revokeIf({ tx }, c.id, c.revision, now),
      // Changed since it was read; a concurrent revocation makes this one a repeat.
      lost: async () => {
        const current = await this.get(auth, id, { tx });
        if (current.status === 'revoked')
          return new AppError('credential_revoked', { status: 422 });
        return new AppError('revision_mismatch');
      },
    });
    // Revocation is final, so what the credential issued is revoked with it. Authentication
    // checks the chain anyway; this makes their status say so.
    await repo.revokeIssuedBy({ tx }, c.id, { revokedAt: now, revision: newRevision() });
    return (await repo.get({ tx }, auth.account.id, c.id))!;
  }

  async remove(auth: AuthContext, id: number | null, opts: { tx?: Tx } = {}): Promise<void> {
    const tx = opts.tx ?? this.db;
    const c = await this.manageable(auth, id, { tx });
    if (c.id === auth.credential.id || c.lastUsedAt || (await repo.hasUsage({ tx }, c.id))) {
      throw new AppError('credential_not_removable');
    }
    await repo.remove({ tx }, c.id);
  }

  async linkAdmin(
    auth: AuthContext,
    id: number | null,
    adminId: number | null,
    opts: { tx?: Tx } = {},
  ) {
    const tx = opts.tx ?? this.db;
    const c = await this.manageable(auth, id, { tx });
    if (c.status === 'revoked') throw new AppError('credential_revoked', { status: 422 });
    if (adminId === null || !(await repo.adminInAccount({ tx }, auth.account.id, adminId))) {
      throw new AppError('not_found');
    }
    await repo.link({ tx }, c.id, adminId, this.clock.now().toISOString());
    const link = await repo.getLink({ tx }, c.id, adminId);
    return { credentialId: c.id, adminId, createdAt: link.created_at as string };
  }

  async unlinkAdmin(
    auth: AuthContext,
    id: number | null,
    adminId: number | null,
    opts: { tx?: Tx } = {},
  ) {
    const tx = opts.tx ?? this.db;
    const c = await this.manageable(auth, id, { tx });
    if (adminId === null || (await repo.unlink({ tx }, c.id, adminId)) === 0)
      throw new AppError('not_found');
  }
}
