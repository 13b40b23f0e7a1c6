// RS256 signing keys for access tokens. Generated on first start, private parts sealed with
// SECRETS_KEY in the database (never logged). Rotation retires the active key: it stops signing at
// once and keeps verifying for one access-token lifetime, after which no token it signed is valid.
import crypto from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Clock } from '../clock.ts';
import { isPostgres, type Db } from '../db/knex.ts';
import { transaction } from '../db/tx.ts';
import { seal, unseal } from '../secrets-key.ts';
import { ACCESS_TOKEN_SECONDS } from './constants.ts';

const ALG = 'RS256';
/** Another instance may rotate: reload at least this often (and on an unknown kid). */
const RELOAD_MS = 60_000;
const UNKNOWN_KID_RELOAD_MS = 5_000;

interface LoadedKey {
  kid: string;
  publicKey: CryptoKey;
  createdAt: string;
  retiredAt: string | null;
}

export class SigningKeys {
  private keys: LoadedKey[] = [];
  private active: { kid: string; privateKey: CryptoKey } | null = null;
  private loadedAt = -Infinity;
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly secretsKey: Buffer;

  constructor(db: Db, clock: Clock, secretsKey: Buffer) {
    this.db = db;
    this.clock = clock;
    this.secretsKey = secretsKey;
  }

  /** Loads the keys, creating the first one on an empty database. */
  async init(): Promise<void> {
    await this.load();
    if (this.active) return;
    const row = await newKeyRow(this.clock, this.secretsKey);
    // Instances starting together on an empty database make one key, not one each: a token
    // signed with one instance's own key was refused by the other until its next reload.
    await transaction(this.db, async (tx) => {
      if (isPostgres(tx)) await tx.raw('SELECT pg_advisory_xact_lock(7231002)');
      if (!(await tx('oauth_signing_keys').whereNull('retired_at').first('kid')))
        await tx('oauth_signing_keys').insert(row);
    });
    await this.load();
  }

  async signingKey(): Promise<{ kid: string; privateKey: CryptoKey }> {
    if (this.now() - this.loadedAt >= RELOAD_MS || !this.active) await this.load();
    if (!this.active) await this.init();
    return this.active!;
  }

  /** The public key for `kid`, or undefined when it is unknown or past its verification window. */
  async verificationKey(kid: string): Promise<CryptoKey | undefined> {
    const age = this.now() - this.loadedAt;
    let found = this.keys.find((k) => k.kid === kid);
    if (age >= RELOAD_MS || (!found && age >= UNKNOWN_KID_RELOAD_MS)) {
      await this.load();
      found = this.keys.find((k) => k.kid === kid);
    }
    if (!found) return undefined;
    return isVerifying(found.retiredAt, this.clock) ? found.publicKey : undefined;
  }

  /** Reload now (after a rotation in this process). */
  async reload(): Promise<void> {
    await this.load();
  }

  private now(): number {
    return this.clock.now().getTime();
  }

  private async load(): Promise<void> {
    const rows = await this.db('oauth_signing_keys').orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'kid', order: 'desc' },
    ]);
    const keys: LoadedKey[] = [];
    for (const r of rows) {
      if (!isVerifying(r.retired_at, this.clock)) continue;
      const publicKey = (await importJWK(JSON.parse(r.public_jwk) as JWK, ALG)) as CryptoKey;
      keys.push({ kid: r.kid, publicKey, createdAt: r.created_at, retiredAt: r.retired_at });
    }
    // The newest unretired key signs (two instances starting together may both create one).
    const current = rows.find((r: any) => r.retired_at === null);
    let active = this.active;
    if (!current) active = null;
    else if (active?.kid !== current.kid) {
      const jwk = openPrivateJwk(this.secretsKey, current.private_jwk_sealed, current.kid);
      active = { kid: current.kid, privateKey: (await importJWK(jwk, ALG)) as CryptoKey };
    }
    this.keys = keys;
    this.active = active;
    this.loadedAt = this.now();
  }
}

function isVerifying(retiredAt: string | null, clock: Clock): boolean {
  if (retiredAt === null) return true;
  return Date.parse(retiredAt) + ACCESS_TOKEN_SECONDS * 1000 > clock.now().getTime();
}

async function newKeyRow(clock: Clock, secretsKey: Buffer) {
  const { publicKey, privateKey } = await generateKeyPair(ALG, { extractable: true });
  const kid = crypto.randomBytes(12).toString('base64url');
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' };
  const privateJwk = await exportJWK(privateKey);
  return {
    kid,
    alg: ALG,
    public_jwk: JSON.stringify(publicJwk),
    private_jwk_sealed: seal(secretsKey, JSON.stringify(privateJwk), kid),
    created_at: clock.now().toISOString(),
    retired_at: null,
  };
}

function openPrivateJwk(secretsKey: Buffer, sealed: string, kid: string): JWK {
  try {
    return JSON.parse(unseal(secretsKey, sealed, kid)) as JWK;
  } catch {
    throw new Error(
      "Cannot decrypt the OAuth signing key: SECRETS_KEY (or the data folder's secrets.key) " +
        'is not the one it was stored with',
    );
  }
}

/**
 * Retires the signing key(s) and creates a new one. Tokens already issued keep verifying until
 * they expire; keys retired longer ago than an access-token lifetime are deleted. Instances pick
 * the new key up within a minute.
 */
export async function rotateSigningKey(deps: {
  db: Db;
  clock: Clock;
  secretsKey: Buffer;
}): Promise<{ kid: string; retired: string[] }> {
  const { db, clock } = deps;
  const row = await newKeyRow(clock, deps.secretsKey);
  const cutoff = new Date(clock.now().getTime() - ACCESS_TOKEN_SECONDS * 1000).toISOString();
  // One transaction: no instance ever sees a moment without an active key. transaction(), not
  // knex's: on SQLite a deferred read-then-write fails at once ("database is locked") when the
  // running server commits in between; transaction() begins IMMEDIATE and waits its turn.
  const retired = await transaction(db, async (tx) => {
    const kids = (await tx('oauth_signing_keys').whereNull('retired_at').pluck('kid')) as string[];
    await tx('oauth_signing_keys').whereNull('retired_at').update({ retired_at: row.created_at });
    await tx('oauth_signing_keys').where('retired_at', '<', cutoff).delete();
    await tx('oauth_signing_keys').insert(row);
    return kids;
  });
  return { kid: row.kid, retired };
}
