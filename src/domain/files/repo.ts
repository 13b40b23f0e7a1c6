// Files (table `files`). Functions take the caller's `{ tx }` (or the database) and return domain
// shapes; the row's snake_case never leaves this file.
import type { Db, Tx } from '../../db/knex.ts';
import { insertId } from '../../db/dialect.ts';

export type Purpose = 'import' | 'export' | 'attachment';

export interface StoredFile {
  id: number;
  accountId: number;
  purpose: Purpose;
  filename: string;
  contentType: string;
  size: number;
  sha256: string;
  createdAt: string;
}

/** What only the files domain sees: where the bytes are. */
export interface FileRecord extends StoredFile {
  storageKey: string;
}

export type NewFile = Omit<FileRecord, 'id'>;

const map = (r: any): FileRecord => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  purpose: r.purpose,
  filename: r.filename,
  contentType: r.content_type,
  // PostgreSQL returns bigint as a string; 5 GiB is far below 2^53.
  size: Number(r.size),
  sha256: r.sha256,
  createdAt: r.created_at,
  storageKey: r.storage_key,
});

/** The public shape, without the storage key. */
export const publicFile = ({ storageKey: _, ...f }: FileRecord): StoredFile => f;

export const filesRepo = {
  /** An available file of the account (deleted files are not found). */
  async get(q: Tx | Db, accountId: number, id: number): Promise<FileRecord | null> {
    const r = await q('files').where({ account_id: accountId, id, status: 'available' }).first();
    return r ? map(r) : null;
  },

  /** Any available file by id alone: a signed download URL is its own authority. */
  async getAvailable(q: Tx | Db, id: number): Promise<FileRecord | null> {
    const r = await q('files').where({ id, status: 'available' }).first();
    return r ? map(r) : null;
  },

  insert({ tx }: { tx: Tx }, f: NewFile): Promise<number> {
    return insertId({ tx }, 'files', {
      account_id: f.accountId,
      purpose: f.purpose,
      filename: f.filename,
      content_type: f.contentType,
      size: f.size,
      sha256: f.sha256,
      storage_key: f.storageKey,
      status: 'available',
      created_at: f.createdAt,
    });
  },

  /** Every available file of the account marked deleted at `now` (a sandbox reset). */
  markAccountDeleted({ tx }: { tx: Tx }, accountId: number, now: string): Promise<number> {
    return tx('files')
      .where({ account_id: accountId, status: 'available' })
      .update({ status: 'deleted', deleted_at: now });
  },

  /** The storage keys of the account's files deleted at `now`, a page after `afterId`. */
  async deletedAt(q: Tx | Db, accountId: number, now: string, afterId: number, limit: number) {
    const rows = await q('files')
      .where({ account_id: accountId, status: 'deleted', deleted_at: now })
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .select('id', 'storage_key');
    return rows.map((r: any) => ({ id: Number(r.id), storageKey: String(r.storage_key) }));
  },

  async markDeleted({ tx }: { tx: Tx }, id: number, now: string): Promise<boolean> {
    const n = await tx('files')
      .where({ id, status: 'available' })
      .update({ status: 'deleted', deleted_at: now });
    return n > 0;
  },
};
