// Uploads (table `uploads`) and the part checksums declared at completion. Functions take the
// caller's `{ tx }` (or the database) and return domain shapes.
import type { Db, Tx } from '../../db/knex.ts';
import { insertId } from '../../db/dialect.ts';
import type { Purpose } from './repo.ts';

export type UploadStatus =
  'pending' | 'completing' | 'completed' | 'failed' | 'canceled' | 'expired';

export interface Upload {
  id: number;
  accountId: number;
  purpose: Purpose;
  filename: string;
  contentType: string;
  size: number;
  sha256: string;
  partSize: number;
  partsCount: number;
  status: UploadStatus;
  storageKey: string;
  storageUploadId: string;
  fileId: number | null;
  failureReason: string | null;
  /** When the store joined the parts into the object (a completion may be retried from there). */
  joinedAt: string | null;
  revision: string;
  expiresAt: string;
  createdAt: string;
  updatedAt: string;
}

export type NewUpload = Omit<Upload, 'id' | 'fileId' | 'failureReason' | 'joinedAt'>;

const map = (r: any): Upload => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  purpose: r.purpose,
  filename: r.filename,
  contentType: r.content_type,
  size: Number(r.size),
  sha256: r.sha256,
  partSize: Number(r.part_size),
  partsCount: Number(r.parts_count),
  status: r.status,
  storageKey: r.storage_key,
  storageUploadId: r.storage_upload_id,
  fileId: r.file_id === null || r.file_id === undefined ? null : Number(r.file_id),
  failureReason: r.failure ?? null,
  joinedAt: r.joined_at ?? null,
  revision: r.revision,
  expiresAt: r.expires_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface UploadChange {
  status: UploadStatus;
  fileId?: number;
  failureReason?: string;
  /** Kept as it was unless given. */
  joinedAt?: string | null;
  revision: string;
  updatedAt: string;
}

export const uploadsRepo = {
  async get(q: Tx | Db, accountId: number, id: number): Promise<Upload | null> {
    const r = await q('uploads').where({ account_id: accountId, id }).first();
    return r ? map(r) : null;
  },

  /** By id alone: a signed part URL is its own authority. */
  async byId(q: Tx | Db, id: number): Promise<Upload | null> {
    const r = await q('uploads').where({ id }).first();
    return r ? map(r) : null;
  },

  insert({ tx }: { tx: Tx }, u: NewUpload): Promise<number> {
    return insertId({ tx }, 'uploads', {
      account_id: u.accountId,
      purpose: u.purpose,
      filename: u.filename,
      content_type: u.contentType,
      size: u.size,
      sha256: u.sha256,
      part_size: u.partSize,
      parts_count: u.partsCount,
      status: u.status,
      storage_key: u.storageKey,
      storage_upload_id: u.storageUploadId,
      revision: u.revision,
      expires_at: u.expiresAt,
      created_at: u.createdAt,
      updated_at: u.updatedAt,
    });
  },

  /** Moves the upload on only if it is still in one of `from` (and at `revision`, if given). */
  async transition(
    { tx }: { tx: Tx },
    id: number,
    from: UploadStatus[],
    change: UploadChange,
    revision?: string,
  ): Promise<boolean> {
    const q = tx('uploads').where('id', id).whereIn('status', from);
    if (revision !== undefined) q.where('revision', revision);
    const n = await q.update({
      status: change.status,
      file_id: change.fileId ?? null,
      failure: change.failureReason ?? null,
      ...(change.joinedAt !== undefined ? { joined_at: change.joinedAt } : {}),
      revision: change.revision,
      updated_at: change.updatedAt,
    });
    return n > 0;
  },

  /** The account's unfinished uploads end now: they read as expired and the sweep deletes their parts. */
  expireAccount({ tx }: { tx: Tx }, accountId: number, now: string): Promise<number> {
    return tx('uploads')
      .where('account_id', accountId)
      .whereIn('status', ['pending', 'completing'])
      .update({ expires_at: now });
  },

  /** Unfinished uploads whose 24 hours have passed (at most `limit`). */
  async expired(q: Tx | Db, now: string, limit: number): Promise<Upload[]> {
    const rows = await q('uploads')
      .whereIn('status', ['pending', 'completing'])
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(limit);
    return rows.map(map);
  },
};
