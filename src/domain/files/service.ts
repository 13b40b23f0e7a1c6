// Files: bytes in the store (local disk or S3), described by a row. Other areas use this service
// (exports write files, imports read them); clients reach the bytes only through download links.
import { assertAccountActive } from '../accounts/active.ts';
import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Clock } from '../../clock.ts';
import type { Db, Tx } from '../../db/knex.ts';
import { transaction } from '../../db/tx.ts';
import { AppError } from '../../errors.ts';
import { randomHex } from '../shared/ids.ts';
import { filesRepo, publicFile, type FileRecord, type StoredFile } from './repo.ts';
import { uploadsRepo } from './uploads-repo.ts';
import type { Expiry, Storage } from './storage/types.ts';

export type { StoredFile } from './repo.ts';

/** Part URLs and download links expire after an hour. */
export const LINK_TTL_MS = 3_600_000;

export interface DownloadLink {
  url: string;
  expiresAt: string;
}

export class FilesService {
  private readonly db: Db;
  private readonly clock: Clock;
  readonly storage: Storage;
  constructor(db: Db, clock: Clock, storage: Storage) {
    this.db = db;
    this.clock = clock;
    this.storage = storage;
  }

  async get(accountId: number, id: number, opts: { tx?: Tx } = {}): Promise<StoredFile> {
    return publicFile(await this.record(accountId, id, opts));
  }

  /**
   * Streams `body` into the store, counting its size and SHA-256 on the way, then records the
   * file. If the record cannot be written, the bytes are deleted again.
   */
  async createFromStream(
    accountId: number,
    input: { purpose: 'export'; filename: string; contentType: string },
    body: AsyncIterable<Uint8Array>,
  ): Promise<StoredFile> {
    const key = newStorageKey(accountId);
    const hash = crypto.createHash('sha256');
    let size = 0;
    async function* counted() {
      for await (const chunk of body) {
        hash.update(chunk);
        size += chunk.length;
        yield chunk;
      }
    }
    await this.storage.put(key, counted());
    const file = {
      accountId,
      purpose: input.purpose,
      filename: input.filename,
      contentType: input.contentType,
      size,
      sha256: hash.digest('hex'),
      createdAt: this.clock.now().toISOString(),
      storageKey: key,
    };
    try {
      const id = await transaction(this.db, (tx) => filesRepo.insert({ tx }, file));
      return publicFile({ id, ...file });
    } catch (err) {
      await this.storage.remove(key).catch(() => undefined);
      throw err;
    }
  }

  /** The file's bytes as a stream (404 not_found, 503 storage_unavailable). */
  async openRead(accountId: number, id: number): Promise<Readable> {
    const f = await this.record(accountId, id);
    return this.storage.read(f.storageKey);
  }

  /**
   * Marks the file deleted, then deletes its bytes: once the row says deleted nobody reads them,
   * and a store that fails now leaves only unreachable bytes behind, never a file without bytes.
   */
  async remove(accountId: number, id: number): Promise<void> {
    const f = await this.record(accountId, id);
    const now = this.clock.now().toISOString();
    await transaction(this.db, (tx) => filesRepo.markDeleted({ tx }, f.id, now));
    await this.storage.remove(f.storageKey);
  }

  /**
   * A sandbox reset: every file of the account is deleted and every unfinished upload ends, in the
   * reset's transaction; the bytes go afterwards (`purgeDeleted`, a job the caller enqueues in the
   * same transaction), since a store cannot roll back with the database.
   */
  async resetAccount(
    { tx }: { tx: Tx },
    accountId: number,
  ): Promise<{ files: number; uploads: number; at: string }> {
    const at = this.clock.now().toISOString();
    const files = await filesRepo.markAccountDeleted({ tx }, accountId, at);
    const uploads = await uploadsRepo.expireAccount({ tx }, accountId, at);
    return { files, uploads, at };
  }

  /** Deletes the bytes of the files a reset deleted at `at` (a retried job deletes nothing twice). */
  async purgeDeleted(accountId: number, at: string): Promise<number> {
    let n = 0;
    for (let after = 0; ;) {
      const page = await filesRepo.deletedAt(this.db, accountId, at, after, 100);
      if (page.length === 0) return n;
      for (const f of page) await this.storage.remove(f.storageKey);
      n += page.length;
      after = page.at(-1)!.id;
    }
  }

  /** A signed URL that serves the file's bytes for the next hour. */
  async downloadLink(accountId: number, id: number, opts: { tx?: Tx } = {}): Promise<DownloadLink> {
    const f = await this.record(accountId, id, opts);
    const expiry = linkExpiry(this.clock);
    const url = await this.storage.downloadUrl(
      f.storageKey,
      { fileId: f.id, filename: f.filename, contentType: f.contentType, size: f.size },
      expiry,
    );
    return { url, expiresAt: expiry.expiresAt.toISOString() };
  }

  /** For the local store's download route: the file a signed URL names, if still available. */
  async findForDownload(id: number): Promise<FileRecord | null> {
    const f = await filesRepo.getAvailable(this.db, id);
    if (f) await assertAccountActive({ tx: this.db }, f.accountId);
    return f;
  }

  private async record(accountId: number, id: number, opts: { tx?: Tx } = {}) {
    const f = await filesRepo.get(opts.tx ?? this.db, accountId, id);
    if (!f) throw new AppError('not_found');
    return f;
  }
}

export const linkExpiry = (clock: Clock): Expiry => ({
  expiresAt: new Date(clock.now().getTime() + LINK_TTL_MS),
  seconds: LINK_TTL_MS / 1000,
});

/** Keys group an account's objects and cannot be guessed. */
export function newStorageKey(accountId: number): string {
  return `a${accountId}/${randomHex(16)}`;
}
