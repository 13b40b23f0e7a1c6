// SECRETS_KEY encrypts secrets stored in the database (the OAuth signing keys, administrators'
// TOTP secrets), so a database dump alone does not let anyone mint access tokens or pass the
// second factor. Taken from the environment when
// set; otherwise generated once into the data folder (mode 0600) and reused on every start.
// Several instances on one PostgreSQL database must share the same SECRETS_KEY.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config.ts';
import { keyObject } from './domain/shared/keys.ts';

export const SECRETS_KEY_FILE = 'secrets.key';

/** The 256-bit AES key derived from SECRETS_KEY, or from the key file (created when absent). */
export function loadSecretsKey(config: Pick<Config, 'secretsKey' | 'dataDir'>): Buffer {
  const material =
    config.secretsKey ?? readOrCreateKeyFile(path.join(config.dataDir, SECRETS_KEY_FILE));
  if (material.length < 16) throw new Error('SECRETS_KEY must be at least 16 characters long');
  // HKDF turns any high-entropy string (the file holds 32 random bytes) into exactly 32 bytes and
  // keeps this key separate from anything else derived from the same material later.
  const key = crypto.hkdfSync('sha256', material, 'school-platform', 'secrets-key/aes-256-gcm', 32);
  return Buffer.from(key);
}

function readOrCreateKeyFile(file: string): string {
  const existing = readKeyFile(file);
  if (existing !== undefined) return existing;
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    // 'wx': if another process created it a moment ago, keep theirs (read below).
    fs.writeFileSync(file, crypto.randomBytes(32).toString('base64url') + '\n', {
      mode: 0o600,
      flag: 'wx',
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const created = readKeyFile(file);
  if (!created) throw new Error(`${file} is empty`);
  return created;
}

function readKeyFile(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

const VERSION = 'v1';

/**
 * AES-256-GCM with a random 96-bit IV. `context` (e.g. the key id) is authenticated data: a sealed
 * value copied to another row does not open there.
 */
export function seal(key: Buffer, plaintext: string, context: string): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', keyObject(key), iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const sealed = Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  return `${VERSION}.${sealed}`;
}

/** Whether a stored value is sealed (rows written before a secret was sealed hold it in clear). */
export const isSealed = (value: string): boolean => value.startsWith(`${VERSION}.`);

export function unseal(key: Buffer, sealed: string, context: string): string {
  const [version, data] = sealed.split('.');
  if (version !== VERSION || !data) throw new Error('unknown sealed value format');
  const raw = Buffer.from(data, 'base64url');
  const decipher = crypto.createDecipheriv('aes-256-gcm', keyObject(key), raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}
