// Uploads: S3-style multipart uploads that become files. The client creates an upload (purpose,
// name, type, size, SHA-256), PUTs its parts to signed URLs that go straight to the store, then
// completes it naming each part's ETag and SHA-256. Completion joins the parts and reads the
// result once to check sizes, checksums and type; any mismatch is 422 upload_integrity_mismatch
// and creates no file.
import { assertAccountActive } from '../accounts/active.ts';
import type { Clock } from '../../clock.ts';
import type { Db, Tx } from '../../db/knex.ts';
import { transaction } from '../../db/tx.ts';
import { AppError } from '../../errors.ts';
import { newRevision } from '../shared/ids.ts';
import { checkUploadRequest, partBytes, partLayout, UPLOAD_TTL_MS } from './limits.ts';
import { filesRepo, type Purpose } from './repo.ts';
import { linkExpiry, newStorageKey } from './service.ts';
import { integrityMismatch, storageError } from './storage/errors.ts';
import { normalizeEtag } from './storage/local.ts';
import type { PartTag, Storage, StoredPart } from './storage/types.ts';
import { uploadsRepo, type Upload, type UploadStatus } from './uploads-repo.ts';
import { verifyBytes } from './verify.ts';

export type { Upload } from './uploads-repo.ts';

export interface UploadInput {
  purpose: Purpose;
  filename: string;
  contentType: string;
  size: number;
  sha256: string;
  partSize?: number;
}

export interface PartUrl {
  number: number;
  size: number;
  url: string;
  expiresAt: string;
}

export interface CompletedPart extends PartTag {
  sha256: string;
}

/** Part URLs handed out with a new upload (more through POST /uploads/{id}/parts). */
export const FIRST_URLS = 100;

/**
 * How long a `completing` claim without a join holds the upload. Longer than a join takes: S3's
 * call gives up within connect_timeout_ms + timeout_ms (35 s by default), and a local join of the
 * largest upload (5 GiB) copies it once. After that a retry takes the claim over.
 */
export const COMPLETING_LEASE_MS = 10 * 60_000;

export class UploadsService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly storage: Storage;
  constructor(db: Db, clock: Clock, storage: Storage) {
    this.db = db;
    this.clock = clock;
    this.storage = storage;
  }

  /** Creates the upload and returns it with URLs for its first parts. */
  async create(accountId: number, input: UploadInput, opts: { tx?: Tx } = {}) {
    checkUploadRequest(input);
    const { partSize, partsCount } = partLayout(input.size, input.partSize);
    const key = newStorageKey(accountId);
    // The store's multipart upload comes first: a row never points at nothing. If the row is
    // not written, the sweep has no record of it, so it is aborted here.
    const storageUploadId = await this.storage.createMultipart(key);
    const now = this.clock.now();
    const upload: Omit<Upload, 'id'> = {
      accountId,
      purpose: input.purpose,
      filename: input.filename,
      contentType: input.contentType,
      size: input.size,
      sha256: input.sha256.toLowerCase(),
      partSize,
      partsCount,
      status: 'pending',
      storageKey: key,
      storageUploadId,
      fileId: null,
      failureReason: null,
      joinedAt: null,
      revision: newRevision(),
      expiresAt: new Date(now.getTime() + UPLOAD_TTL_MS).toISOString(),
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
    };
    let id: number;
    try {
      id = opts.tx
        ? await uploadsRepo.insert({ tx: opts.tx }, upload)
        : await transaction(this.db, (tx) => uploadsRepo.insert({ tx }, upload));
    } catch (err) {
      await this.storage.abortMultipart(key, storageUploadId).catch(() => undefined);
      throw err;
    }
    const created = { id, ...upload };
    const first = Array.from({ length: Math.min(partsCount, FIRST_URLS) }, (_, i) => i + 1);
    return { upload: created, partUrls: await this.urls(created, first) };
  }

  async get(accountId: number, id: number, opts: { tx?: Tx } = {}): Promise<Upload> {
    const u = await uploadsRepo.get(opts.tx ?? this.db, accountId, id);
    if (!u) throw new AppError('not_found');
    return this.current(u);
  }

  /** Fresh signed URLs for the given parts of a pending upload. */
  async partUrls(
    accountId: number,
    id: number,
    numbers: number[],
    opts: { tx?: Tx } = {},
  ): Promise<PartUrl[]> {
    const u = await this.get(accountId, id, opts);
    requireStatus(u, ['pending']);
    const bad = numbers.findIndex((n) => n > u.partsCount);
    if (bad >= 0) {
      throw new AppError('validation_failed', {
        details: [
          {
            field: `part_numbers[${bad}]`,
            code: 'validation_failed',
            reason: 'out_of_range',
            message: `The upload has ${u.partsCount} parts.`,
          },
        ],
      });
    }
    return this.urls(u, numbers);
  }

  /** The pending upload a signed part URL names (null: gone, finished or expired). */
  async forPart(id: number): Promise<Upload | null> {
    const u = await uploadsRepo.byId(this.db, id);
    if (!u || this.current(u).status !== 'pending') return null;
    await assertAccountActive({ tx: this.db }, u.accountId);
    return u;
  }

  /** The parts the store holds so far (a client resuming an upload sends only the others). */
  async parts(accountId: number, id: number): Promise<StoredPart[]> {
    const u = await this.get(accountId, id);
    if (u.status !== 'pending') return [];
    return this.storage.listParts(u.storageKey, u.storageUploadId);
  }

  /** Cancels a pending upload and deletes its parts; canceling twice changes nothing. */
  async cancel(accountId: number, id: number, opts: { tx?: Tx } = {}): Promise<Upload> {
    const u = await this.get(accountId, id, opts);
    if (u.status === 'canceled') return u;
    requireStatus(u, ['pending']);
    const change = this.change('canceled');
    const moved = await this.write(opts.tx, (tx) =>
      uploadsRepo.transition({ tx }, u.id, ['pending'], change),
    );
    if (!moved) throw new AppError('state_conflict');
    // After the row says canceled no part URL is honoured; the store's parts go now. If the store
    // fails here, the expiry sweep cannot see them: aborting is retried once, then left to the
    // store's own lifecycle rules.
    await this.storage
      .abortMultipart(u.storageKey, u.storageUploadId)
      .catch(() =>
        this.storage.abortMultipart(u.storageKey, u.storageUploadId).catch(() => undefined),
      );
    return { ...u, ...change, fileId: null, failureReason: null };
  }

  /**
   * Joins the parts and checks them. Runs outside any request transaction: reading gigabytes
   * inside one would hold SQLite's writer for the whole time. Completing a completed upload
   * answers it again, so a client that lost the answer may simply retry. Once the parts are
   * joined the upload is marked so (joined_at): if reading the object back fails (503), a retry
   * checks the joined object again instead of finding the upload stuck in `completing`.
   */
  async complete(accountId: number, id: number, parts: CompletedPart[]): Promise<Upload> {
    let u = await this.get(accountId, id);
    if (u.status === 'completed') return u;
    if (u.status === 'completing' && u.joinedAt) {
      checkPartList(u, parts);
      return this.finish(u, parts);
    }
    // A claim whose process died before it joined (or recorded the join) is retaken after the
    // lease, not left to the 24-hour sweep; the retaker goes on as if the upload were pending.
    const stale = u.status === 'completing' && this.claimExpired(u);
    if (!stale) requireStatus(u, ['pending']);
    checkPartList(u, parts);
    // Parts first, from the store's listing: a part missing, cut short or with another ETag is
    // found before the parts are joined, so the upload stays pending and the client sends that part again.
    const stored = new Map(
      (await this.storage.listParts(u.storageKey, u.storageUploadId)).map((p) => [p.number, p]),
    );
    // No parts at all: a join may have happened whose answer was lost (a timeout after the store
    // joined, or a process that died after the join). The object is then there: check it.
    if (stored.size === 0 && (await this.storage.exists(u.storageKey))) {
      const joined = this.change('completing', { joinedAt: this.clock.now().toISOString() });
      const from: UploadStatus[] = stale ? ['completing'] : ['pending'];
      if (
        !(await this.write(undefined, (tx) =>
          uploadsRepo.transition({ tx }, u.id, from, joined, u.revision),
        ))
      )
        throw new AppError('state_conflict');
      return this.finish({ ...u, ...joined }, parts);
    }
    for (let n = 1; n <= u.partsCount; n++) {
      const p = stored.get(n);
      if (!p) throw integrityMismatch('part_not_uploaded', `Part ${n} is not uploaded.`, 'parts');
      const expected = partBytes(u.size, u.partSize, n);
      if (p.size !== expected) {
        throw integrityMismatch(
          'part_size_mismatch',
          `Part ${n} has ${p.size} bytes, not ${expected}.`,
          `parts[${n - 1}]`,
        );
      }
      if (normalizeEtag(p.etag) !== normalizeEtag(parts[n - 1]!.etag)) {
        throw integrityMismatch(
          'part_etag_mismatch',
          `Part ${n} was uploaded with another ETag.`,
          `parts[${n - 1}].etag`,
        );
      }
    }
    const claim = this.change('completing');
    if (
      !(await this.write(undefined, (tx) =>
        uploadsRepo.transition({ tx }, u.id, [stale ? 'completing' : 'pending'], claim, u.revision),
      ))
    ) {
      throw new AppError('state_conflict');
    }
    u = { ...u, ...claim };
    const release = () =>
      this.write(undefined, (tx) =>
        uploadsRepo.transition({ tx }, u.id, ['completing'], this.change('pending')),
      );
    try {
      await this.storage.completeMultipart(u.storageKey, u.storageUploadId, parts);
    } catch (err) {
      // Nothing was joined: the parts are still there, and the client may send them again.
      await release().catch(() => undefined);
      throw err;
    }
    const joined = this.change('completing', { joinedAt: this.clock.now().toISOString() });
    await this.write(undefined, (tx) =>
      uploadsRepo.transition({ tx }, u.id, ['completing'], joined),
    );
    return this.finish({ ...u, ...joined }, parts);
  }

  /**
   * Reads the joined object once and checks it against what was declared: a mismatch fails the
   * upload (its bytes are deleted), a match creates the file. A store that fails while reading
   * is 503 and leaves the upload `completing` and joined, for a retry to check again.
   */
  private async finish(u: Upload, parts: CompletedPart[]): Promise<Upload> {
    const declared = {
      size: u.size,
      sha256: u.sha256,
      partSize: u.partSize,
      partSha256: new Map(parts.map((p) => [p.number, p.sha256.toLowerCase()])),
      contentType: u.contentType,
    };
    let mismatch;
    try {
      mismatch = await verifyBytes(await this.storage.read(u.storageKey), declared);
    } catch (err) {
      // The stream may fail after it started (a reset socket): still the store's failure.
      throw storageError(err);
    }
    if (mismatch) {
      // The parts are joined (S3 keeps no parts after that): this upload is over.
      await this.storage.remove(u.storageKey).catch(() => undefined);
      const failed = this.change('failed', { failureReason: mismatch.reason });
      await this.write(undefined, (tx) =>
        uploadsRepo.transition({ tx }, u.id, ['completing'], failed),
      );
      throw integrityMismatch(mismatch.reason, mismatch.message, mismatch.field);
    }
    const finished = await this.write(undefined, async (tx) => {
      const fileId = await filesRepo.insert(
        { tx },
        {
          accountId: u.accountId,
          purpose: u.purpose,
          filename: u.filename,
          contentType: u.contentType,
          size: u.size,
          sha256: u.sha256,
          createdAt: this.clock.now().toISOString(),
          storageKey: u.storageKey,
        },
      );
      const done = this.change('completed', { fileId });
      // Two retries may check the same joined object at once: one creates the file, and the
      // other's insert rolls back with its transaction.
      if (!(await uploadsRepo.transition({ tx }, u.id, ['completing'], done))) {
        throw new AppError('state_conflict');
      }
      return { ...u, ...done, failureReason: null };
    }).catch(async (err) => {
      if (!(err instanceof AppError && err.code === 'state_conflict')) throw err;
      const now = await this.get(u.accountId, u.id);
      if (now.status === 'completed') return now;
      throw err;
    });
    return finished;
  }

  /** A `completing` claim not joined and older than the lease: its process is taken for dead. */
  private claimExpired(u: Upload): boolean {
    return Date.parse(u.updatedAt) + COMPLETING_LEASE_MS <= this.clock.now().getTime();
  }

  /** Deletes the parts of unfinished uploads past their 24 hours (the sweep.uploads job). */
  async sweepExpired(limit = 500): Promise<number> {
    const due = await uploadsRepo.expired(this.db, this.clock.now().toISOString(), limit);
    let swept = 0;
    for (const u of due) {
      // Bytes first: if the store fails, the row still says pending and the next sweep retries.
      await this.storage.abortMultipart(u.storageKey, u.storageUploadId);
      await this.storage.remove(u.storageKey);
      const moved = await this.write(undefined, (tx) =>
        uploadsRepo.transition({ tx }, u.id, ['pending', 'completing'], this.change('expired')),
      );
      if (moved) swept += 1;
    }
    return swept;
  }

  /** An unfinished upload past its deadline reads as expired even before the sweep ran. */
  private current(u: Upload): Upload {
    const open = u.status === 'pending' || u.status === 'completing';
    if (open && u.expiresAt <= this.clock.now().toISOString()) return { ...u, status: 'expired' };
    return u;
  }

  private async urls(u: Upload, numbers: number[]): Promise<PartUrl[]> {
    const expiry = linkExpiry(this.clock);
    return Promise.all(
      numbers.map(async (number) => {
        const size = partBytes(u.size, u.partSize, number);
        const url = await this.storage.partUrl(
          u.storageKey,
          u.storageUploadId,
          { uploadId: u.id, number, size },
          expiry,
        );
        return { number, size, url, expiresAt: expiry.expiresAt.toISOString() };
      }),
    );
  }

  private change(
    status: UploadStatus,
    extra: { fileId?: number; failureReason?: string; joinedAt?: string } = {},
  ) {
    return {
      status,
      ...extra,
      revision: newRevision(),
      updatedAt: this.clock.now().toISOString(),
    };
  }

  private write<T>(tx: Tx | undefined, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return tx ? fn(tx) : transaction(this.db, fn);
  }
}

function requireStatus(u: Upload, allowed: UploadStatus[]): void {
  if (!allowed.includes(u.status)) {
    throw new AppError('invalid_transition', {
      details: [
        {
          field: 'status',
          code: 'invalid_transition',
          reason: u.status,
          message: `The upload is ${u.status}.`,
        },
      ],
    });
  }
}

/** Completion names every part exactly once, in order 1..parts_count. */
function checkPartList(u: Upload, parts: CompletedPart[]): void {
  const ok = parts.length === u.partsCount && parts.every((p, i) => p.number === i + 1);
  if (!ok) {
    throw integrityMismatch(
      'part_list',
      `Completion names parts 1 to ${u.partsCount}, each once and in order.`,
      'parts',
    );
  }
}
