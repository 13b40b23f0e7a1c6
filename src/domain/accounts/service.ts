// Bootstrap of accounts and their root secrets: used by the admin CLI, the demo bootstrap on an
// empty database, tests and the bench. Root credentials have no issuer.
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import { generateSecret } from 'otplib';
import type { Db, Tx } from '../../db/knex.ts';
import { transaction } from '../../db/tx.ts';
import type { Clock } from '../../clock.ts';
import { AppError } from '../../errors.ts';
import { credentialsRepo, type AuthMode } from '../credentials/repo.ts';
import { accountsRepo, adminsRepo, legacyKeysRepo } from './repo.ts';
import { newSecret } from '../credentials/secrets.ts';
import { newRevision, randomBase62, sha256 } from '../shared/ids.ts';
import { seal } from '../../secrets-key.ts';

const scrypt = promisify(crypto.scrypt) as (
  p: string,
  s: Buffer,
  len: number,
  o: crypto.ScryptOptions,
) => Promise<Buffer>;
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
/** log2 of scrypt's N for new password hashes (PASSWORD_HASH_COST); a hash keeps the N it was made with. */
export const DEFAULT_PASSWORD_COST = 15;

export async function hashPassword(
  password: string,
  cost = DEFAULT_PASSWORD_COST,
): Promise<string> {
  const salt = crypto.randomBytes(16);
  const N = 2 ** cost;
  const key = await scrypt(password, salt, 32, { ...SCRYPT, N });
  return `scrypt$${N}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64');
  const got = await scrypt(password, Buffer.from(salt, 'base64'), expected.length, {
    ...SCRYPT,
    N: Number(n),
  });
  return crypto.timingSafeEqual(expected, got);
}

const noop: OnReactivated = async () => {};

export const ACCOUNT_STATUSES = ['active', 'blocked', 'removed', 'unavailable'] as const;

/** Authenticated context of a sealed TOTP secret: it opens only as one. */
export const TOTP_CONTEXT = 'administrator-totp';

/** What runs, in the transaction of the change, when an account becomes active again. */
export type OnReactivated = (scope: { tx: Tx }, accountId: number) => Promise<void>;

export class AccountsService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly secretsKey: Buffer;
  private readonly onReactivated: OnReactivated;
  private readonly passwordCost: number;
  private dummyHash: Promise<string> | undefined;
  /**
   * `secretsKey` seals administrators' TOTP secrets (src/secrets-key.ts); `onReactivated` lets
   * go of what waited while the account was not active (its emails: the outbox holds them);
   * `passwordCost` is PASSWORD_HASH_COST, the work factor of new password hashes.
   */
  constructor(
    db: Db,
    clock: Clock,
    secretsKey: Buffer,
    onReactivated: OnReactivated = noop,
    passwordCost = DEFAULT_PASSWORD_COST,
  ) {
    this.db = db;
    this.clock = clock;
    this.secretsKey = secretsKey;
    this.onReactivated = onReactivated;
    this.passwordCost = passwordCost;
  }

  /**
   * Whether `password` is the one `stored` was made from. Without a stored hash (no such
   * administrator) a hash of the same cost is checked anyway and the answer is false, so that
   * the time taken does not tell whether the email exists.
   */
  async checkPassword(password: string, stored: string | undefined): Promise<boolean> {
    if (stored !== undefined) return verifyPassword(password, stored);
    this.dummyHash ??= hashPassword('not the password', this.passwordCost);
    await verifyPassword(password, await this.dummyHash);
    return false;
  }

  private now(): string {
    return this.clock.now().toISOString();
  }

  async isEmpty({ tx = this.db }: { tx?: Tx } = {}): Promise<boolean> {
    return !(await accountsRepo.any({ tx }));
  }

  /** Runs several bootstrap steps atomically (pass the tx to each call). */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    // The shared helper: on SQLite it begins IMMEDIATE (knex's deferred read-then-write fails at
    // once when another process commits in between).
    return transaction(this.db, fn);
  }

  async createAccount(
    input: { name: string; sandbox?: boolean; replicaOf?: number | null },
    { tx = this.db }: { tx?: Tx } = {},
  ) {
    if (input.replicaOf != null && !(await accountsRepo.exists({ tx }, input.replicaOf))) {
      throw new AppError('not_found');
    }
    const id = await accountsRepo.insert(
      { tx },
      {
        name: input.name,
        sandbox: Boolean(input.sandbox),
        replicaOf: input.replicaOf ?? null,
        now: this.now(),
      },
    );
    return { id };
  }

  async setAccountStatus(id: number, status: (typeof ACCOUNT_STATUSES)[number]) {
    return transaction(this.db, async (tx) => {
      const before = await accountsRepo.status({ tx }, id);
      if (before === null || !(await accountsRepo.setStatus({ tx }, id, status)))
        throw new AppError('not_found');
      if (status === 'active' && before !== 'active') await this.onReactivated({ tx }, id);
      return { id, status };
    });
  }

  async createRootCredential(
    input: {
      accountId: number;
      name?: string;
      permissions: string[];
      authMode?: AuthMode;
      test?: boolean;
    },
    { tx = this.db }: { tx?: Tx } = {},
  ) {
    if (!(await accountsRepo.exists({ tx }, input.accountId))) throw new AppError('not_found');
    const environment = input.test ? 'test' : 'live';
    const { secret, hash, last4 } = newSecret(environment);
    const id = await credentialsRepo.insert(
      { tx },
      {
        accountId: input.accountId,
        name: input.name ?? 'Root credential',
        environment,
        authMode: input.authMode ?? 'autonomous',
        permissions: input.permissions,
        secretHash: hash,
        secretLast4: last4,
        issuerId: null,
        expiresAt: null,
        revision: newRevision(),
        now: this.now(),
      },
    );
    return { id, secret };
  }

  /** revoke / suspend / expire from the CLI (no API call can suspend or expire). */
  async setCredentialStatus(id: number, status: 'revoked' | 'suspended' | 'expired' | 'active') {
    const n = await accountsRepo.setCredentialStatus({ tx: this.db }, id, status, this.now());
    if (!n) throw new AppError('not_found');
    return { id, status };
  }

  async createAdmin(
    input: { accountId: number; email: string; password: string },
    { tx = this.db }: { tx?: Tx } = {},
  ) {
    if (!(await accountsRepo.exists({ tx }, input.accountId))) throw new AppError('not_found');
    const totpSecret = generateSecret();
    const id = await adminsRepo.insert(
      { tx },
      {
        accountId: input.accountId,
        email: input.email,
        passwordHash: await hashPassword(input.password, this.passwordCost),
        totpSecret: seal(this.secretsKey, totpSecret, TOTP_CONTEXT),
        now: this.now(),
      },
    );
    return { id, totpSecret };
  }

  async linkAdmin(adminId: number, credentialId: number, { tx = this.db }: { tx?: Tx } = {}) {
    const adminAccount = await adminsRepo.accountOf({ tx }, adminId);
    const credentialAccount = await accountsRepo.credentialAccount({ tx }, credentialId);
    if (adminAccount === null || credentialAccount === null) throw new AppError('not_found');
    if (adminAccount !== credentialAccount) throw new AppError('tenant_mismatch');
    await credentialsRepo.link({ tx }, credentialId, adminId, this.now());
    return { admin_id: adminId, credential_id: credentialId };
  }

  async unlinkAdmin(adminId: number, credentialId: number) {
    const n = await credentialsRepo.unlink({ tx: this.db }, credentialId, adminId);
    if (!n) throw new AppError('not_found');
    return { admin_id: adminId, credential_id: credentialId };
  }

  async removeAdmin(id: number) {
    if (!(await adminsRepo.remove({ tx: this.db }, id))) throw new AppError('not_found');
    return { id, status: 'removed' };
  }

  async createLegacyKey(accountId: number, { tx = this.db }: { tx?: Tx } = {}) {
    if (!(await accountsRepo.exists({ tx }, accountId))) throw new AppError('not_found');
    // Legacy keys have their own shape, so a v3 secret can never be mistaken for one (and back).
    const key = randomBase62(24);
    await legacyKeysRepo.insert({ tx }, accountId, sha256(key), this.now());
    return { key };
  }
}
