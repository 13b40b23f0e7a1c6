// What imports and exports use of the files area (src/domain/files): a structural subset of its
// FilesService, so these areas depend on the calls they make, not on the storage behind them.
import type { Readable } from 'node:stream';
import type { Tx } from '../../db/engine.ts';

export interface FileInfo {
  id: number;
  accountId: number;
  purpose: string;
  filename: string;
  contentType: string;
  size: number;
}

export interface FilesPort {
  /** 404 not_found when the account has no such file. */
  get(accountId: number, id: number, opts?: { tx?: Tx }): Promise<FileInfo>;
  openRead(accountId: number, id: number): Promise<Readable>;
  createFromStream(
    accountId: number,
    meta: { purpose: 'export'; filename: string; contentType: string },
    body: AsyncIterable<Uint8Array>,
  ): Promise<FileInfo>;
  /** Deletes the bytes and marks the file deleted. */
  remove(accountId: number, id: number): Promise<void>;
}
