// Idempotency keys (specification: Idempotency key; DESIGN.md section 4). A key is remembered
// 48 h per credential. The first request holds a lock row; its result is recorded in the same
// transaction as its effects, so a crash leaves either both or neither. A lock left by a request
// that died (another boot of this process on SQLite, or an expired lease) is result_uncertain.
import crypto from 'node:crypto';
import type { Db, Tx } from '../../db/knex.ts';
import { isPostgres } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { HOUR } from '../../clock.ts';
import { AppError } from '../../errors.ts';
import { idempotencyRepo as repo } from './repo.ts';

export const KEY_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
const RETENTION_MS = 48 * HOUR;
const LEASE_MS = 60_000;

export type Reservation =
  | { kind: 'execute'; token: string }
  | { kind: 'replay'; status: number; headers: Record<string, string>; body: string | null };

export interface RecordedResponse {
  status: number;
  headers: Record<string, string>;
  body: string | null;
  replayable: boolean;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as any)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function requestHash(method: string, path: string, body: unknown): string {
  return crypto
    .createHash('sha256')
    .update(`${method} ${path}\n${canonical(body)}`)
    .digest('hex');
}

export class IdempotencyService {
  /** Identifies this process; a lock owned by another boot on SQLite belongs to a dead process. */
  readonly bootId = crypto.randomBytes(8).toString('hex');

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  private isStale(owner: string, lockedAt: string): boolean {
    // On SQLite one process owns the database: a lock of another boot belongs to a crashed
    // process, and one of this process is a request still running (it always completes or
    // releases). On PostgreSQL other live instances share the table, and only the lease tells.
    if (!isPostgres(this.db)) return owner.split(':')[0] !== this.bootId;
    return this.clock.now().getTime() - Date.parse(lockedAt) > LEASE_MS;
  }

  /** Each reservation has its own owner token, so only the request holding it can finish it. */
  private newToken(): string {
    return `${this.bootId}:${crypto.randomBytes(6).toString('hex')}`;
  }

  async reserve(credentialId: number, key: string, hash: string): Promise<Reservation> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = this.clock.now();
      const token = this.newToken();
      const locked = await repo.tryLock(this.db, {
        credentialId,
        key,
        hash,
        owner: token,
        now: now.toISOString(),
      });
      if (locked) {
        // Keys are forgotten after 48 h; sweep old rows now and then instead of on a timer.
        if (Math.random() < 0.01) {
          const cutoff = new Date(now.getTime() - RETENTION_MS).toISOString();
          await repo.purgeBefore(this.db, cutoff).catch(() => undefined);
        }
        return { kind: 'execute', token };
      }
      const rec = await repo.find(this.db, credentialId, key);
      if (!rec) continue;
      if (now.getTime() - Date.parse(rec.createdAt) >= RETENTION_MS) {
        await repo.deleteIf(this.db, rec.id, rec.state); // forgotten after 48 h: a new request
        continue;
      }
      if (rec.requestHash !== hash) throw new AppError('idempotency_key_reused');
      if (rec.state === 'completed') {
        if (!rec.replayable) throw new AppError('secret_not_replayable');
        return {
          kind: 'replay',
          status: rec.responseStatus!,
          headers: rec.responseHeaders,
          body: rec.responseBody,
        };
      }
      if (rec.state === 'uncertain') {
        if (await repo.relock(this.db, rec.id, token, now.toISOString()))
          return { kind: 'execute', token };
        throw new AppError('idempotency_in_progress');
      }
      if (this.isStale(rec.owner, rec.lockedAt)) {
        await repo.markUncertain(this.db, rec.id, rec.lockedAt);
        throw new AppError('result_uncertain');
      }
      throw new AppError('idempotency_in_progress');
    }
    throw new AppError('idempotency_in_progress');
  }

  /**
   * Records the result under the caller's token. If another attempt took the key over (a lease
   * that ran out on PostgreSQL), this attempt is discarded: its transaction rolls back.
   */
  async complete(tx: Tx, credentialId: number, key: string, token: string, res: RecordedResponse) {
    if ((await repo.complete(tx, credentialId, key, token, res)) === 0) {
      throw new AppError('operation_ownership_lost');
    }
  }

  /** Frees the key so the request can be retried (validation errors, failures that changed nothing). */
  release(credentialId: number, key: string, token: string): Promise<void> {
    return repo.release(this.db, credentialId, key, token);
  }
}
