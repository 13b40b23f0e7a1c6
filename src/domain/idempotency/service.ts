// Idempotency keys (specification: Idempotency key; spec/DECISIONS.md, Idempotency). A key is remembered
// 48 h per credential. The first request holds a lock; its result is recorded in the same
// transaction as its effects, so a crash leaves either both or neither.
// - PostgreSQL: the lock is a committed row, shared by every instance, with a lease. A lock left
//   by a request that died (its lease ran out) is result_uncertain.
// - SQLite: one process owns the database, so the lock of a running request lives in this
//   process's memory and the record is written once, completed, with the effects. That saves a
//   commit per request; a crash leaves nothing, so the retry simply runs. Lock rows left by an
//   earlier boot are still honoured (result_uncertain).
import crypto from 'node:crypto';
import type { Db, Tx } from '../../db/knex.ts';
import { isPostgres } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { HOUR } from '../../clock.ts';
import { AppError } from '../../errors.ts';
import { idempotencyRepo as repo, type IdemRecord, type RecordedResponse } from './repo.ts';
import { randomHex } from '../shared/ids.ts';
import { purgeInIdOrder } from '../../db/purge.ts';

export const KEY_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
const RETENTION_MS = 48 * HOUR;
const LEASE_MS = 60_000;

export type Reservation =
  | { kind: 'execute'; token: string }
  | { kind: 'replay'; status: number; headers: Record<string, string>; body: string | null };

export type { RecordedResponse };

/** A request this process is executing under a key (SQLite). */
interface Running {
  token: string;
  hash: string;
  createdAt: string;
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
  return crypto.hash('sha256', `${method} ${path}\n${canonical(body)}`, 'hex');
}

export class IdempotencyService {
  /** Prefix of this process's owner tokens: its lock rows are told from other boots' in the table. */
  readonly bootId = crypto.randomBytes(8).toString('hex');
  /** SQLite: locks in memory, keyed by credential and key. */
  private readonly running: Map<string, Running> | null;
  private readonly db: Db;
  private readonly clock: Clock;

  constructor(db: Db, clock: Clock) {
    this.db = db;
    this.clock = clock;
    this.running = isPostgres(db) ? null : new Map();
  }

  private isStale(lockedAt: string): boolean {
    // On SQLite one process owns the database and holds the locks of its running requests in
    // memory, and reserve refuses a held key before it reads the key's row: a lock row it reads
    // is another boot's, or one whose release failed, and dead. On PostgreSQL other live
    // instances share the table, and only the lease tells.
    if (this.running) return true;
    return this.clock.now().getTime() - Date.parse(lockedAt) > LEASE_MS;
  }

  /** Each reservation has its own owner token, so only the request holding it can finish it. */
  private newToken(): string {
    return `${this.bootId}:${randomHex(6)}`;
  }

  async reserve(credentialId: number, key: string, hash: string): Promise<Reservation> {
    if (!this.running) return this.reserveRow(credentialId, key, hash);
    const slot = `${credentialId}\n${key}`;
    const held = this.running.get(slot);
    if (held) {
      throw new AppError(held.hash === hash ? 'idempotency_in_progress' : 'idempotency_key_reused');
    }
    const token = this.newToken();
    // Taken before the first await, so an identical request arriving meanwhile sees it.
    this.running.set(slot, { token, hash, createdAt: this.clock.now().toISOString() });
    try {
      const reservation = await this.reserveRow(credentialId, key, hash, token);
      if (reservation.kind !== 'execute') this.running.delete(slot);
      return reservation;
    } catch (err) {
      this.running.delete(slot);
      throw err;
    }
  }

  /**
   * Looks at the key's record. With a token (SQLite) a key without one needs no lock row: the
   * in-memory lock is already held. Without (PostgreSQL) the lock row is inserted.
   */
  private async reserveRow(
    credentialId: number,
    key: string,
    hash: string,
    memoryToken?: string,
  ): Promise<Reservation> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = this.clock.now();
      if (memoryToken) {
        const rec = await repo.find({ tx: this.db }, credentialId, key);
        if (!rec) {
          return { kind: 'execute', token: memoryToken };
        }
        const outcome = await this.existing(rec, hash, memoryToken, now);
        if (outcome) return outcome;
        continue;
      }
      const token = this.newToken();
      const locked = await repo.tryLock(
        { tx: this.db },
        {
          credentialId,
          key,
          hash,
          owner: token,
          now: now.toISOString(),
        },
      );
      if (locked) {
        return { kind: 'execute', token };
      }
      const rec = await repo.find({ tx: this.db }, credentialId, key);
      if (!rec) continue;
      const outcome = await this.existing(rec, hash, token, now);
      if (outcome) return outcome;
    }
    throw new AppError('idempotency_in_progress');
  }

  /** What a key with a record means: a replay, an error, a takeover; null to look again. */
  private async existing(
    rec: IdemRecord,
    hash: string,
    token: string,
    now: Date,
  ): Promise<Reservation | null> {
    if (now.getTime() - Date.parse(rec.createdAt) >= RETENTION_MS) {
      await repo.deleteIf({ tx: this.db }, rec.id, rec.state); // forgotten after 48 h: a new request
      return null;
    }
    if (rec.requestHash !== hash) throw new AppError('idempotency_key_reused');
    if (rec.state === 'completed') return this.replay(rec);
    if (rec.state === 'uncertain') {
      if (await repo.relock({ tx: this.db }, rec.id, token, now.toISOString()))
        return { kind: 'execute', token };
      throw new AppError('idempotency_in_progress');
    }
    if (this.isStale(rec.lockedAt)) {
      await repo.markUncertain({ tx: this.db }, rec.id, rec.lockedAt);
      throw new AppError('result_uncertain');
    }
    throw new AppError('idempotency_in_progress');
  }

  /**
   * PostgreSQL: a keyed request that runs in a transaction claims its key inside it (migration
   * 032), and records its result there: no lock row of its own commit, no release to write.
   */
  get claimsInTransaction(): boolean {
    return this.running === null;
  }

  /**
   * Claims the key inside the request's transaction (PostgreSQL): `execute` when this request
   * holds it (and a savepoint is set, for rejectInTransaction), a replay of its record, or
   * `fallback` for a lock row of the committed-row path (a request that runs outside a
   * transaction, a lease run out): roll back and reserve() instead. Throws the key's refusals.
   */
  async claim(
    { tx }: { tx: Tx },
    credentialId: number,
    key: string,
    hash: string,
  ): Promise<Reservation | { kind: 'fallback' }> {
    const now = this.clock.now();
    const forgotten = new Date(now.getTime() - RETENTION_MS).toISOString();
    const claim = await repo.claim({ tx }, credentialId, key, hash, forgotten);
    // The claim deletes a forgotten record only for the request that holds the key.
    const rec = claim.record && claim.record.createdAt > forgotten ? claim.record : null;
    if (!claim.held) {
      // Another request holds the key now; a record of the same body is replayed, as it would be
      // a moment later.
      if (rec && rec.requestHash !== hash) throw new AppError('idempotency_key_reused');
      if (rec?.state === 'completed') return this.replay(rec);
      throw new AppError(claim.sameBody ? 'idempotency_in_progress' : 'idempotency_key_reused');
    }
    if (!rec) return { kind: 'execute', token: this.newToken() };
    if (rec.requestHash !== hash) throw new AppError('idempotency_key_reused');
    if (rec.state === 'completed') return this.replay(rec);
    return { kind: 'fallback' };
  }

  private replay(rec: IdemRecord): Reservation {
    if (!rec.replayable) throw new AppError('secret_not_replayable');
    return {
      kind: 'replay',
      status: rec.responseStatus!,
      headers: rec.responseHeaders,
      body: rec.responseBody,
    };
  }

  /** Records the result of a claim() in its transaction (sent with its COMMIT where it can be). */
  async recordInTransaction(
    { tx }: { tx: Tx },
    credentialId: number,
    key: string,
    hash: string,
    token: string,
    res: RecordedResponse,
  ): Promise<void> {
    const now = this.clock.now().toISOString();
    await repo.insertCompleted({ tx }, { credentialId, key, hash, owner: token, now }, res);
  }

  /** A business rejection after claim(): its effects undone, the key still held. */
  rejectInTransaction({ tx }: { tx: Tx }): Promise<void> {
    return repo.rollbackToClaim({ tx });
  }

  /** Keys are forgotten after 48 h: the sweep.idempotency job deletes older records. */
  async purgeExpired(): Promise<void> {
    const cutoff = new Date(this.clock.now().getTime() - RETENTION_MS).toISOString();
    await purgeInIdOrder(this.db, 'idempotency_keys', cutoff);
  }

  /**
   * Records the result under the caller's token. If another attempt took the key over (a lease
   * that ran out on PostgreSQL), this attempt is discarded: its transaction rolls back.
   */
  async complete(
    { tx }: { tx: Tx },
    credentialId: number,
    key: string,
    token: string,
    res: RecordedResponse,
  ) {
    const run = this.running?.get(`${credentialId}\n${key}`);
    const changed =
      run && run.token === token
        ? await repo.record({ tx }, { credentialId, key, owner: token, ...run }, res)
        : await repo.complete({ tx }, credentialId, key, token, res);
    if (changed === 0) throw new AppError('operation_ownership_lost');
  }

  /** Frees the key so the request can be retried (validation errors, failures that changed nothing). */
  async release(credentialId: number, key: string, token: string): Promise<void> {
    try {
      await repo.release({ tx: this.db }, credentialId, key, token);
    } finally {
      // After the row: a retry arriving in between must not find it unheld (it would be dead).
      this.settle(credentialId, key, token);
    }
  }

  /** SQLite: the request holding `token` has ended (its result is committed, or nothing is). */
  settle(credentialId: number, key: string, token: string): void {
    const slot = `${credentialId}\n${key}`;
    if (this.running?.get(slot)?.token === token) this.running.delete(slot);
  }
}
