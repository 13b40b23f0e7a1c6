// S3-compatible object storage (STORAGE_URL=s3://bucket?endpoint=...&region=...). Placeholder
// until the S3 backend lands; the local store is the default.
import type { Readable } from 'node:stream';
import type { ByteRange, DownloadInfo, Storage, StoredPart } from './types.ts';

export interface S3Options {
  bucket: string;
  endpoint: string | undefined;
  region: string;
}

export function parseStorageUrl(url: string): S3Options {
  const u = new URL(url);
  if (u.protocol !== 's3:' || !u.hostname) throw new Error('STORAGE_URL must be s3://bucket?...');
  return {
    bucket: u.hostname,
    endpoint: u.searchParams.get('endpoint') ?? undefined,
    region: u.searchParams.get('region') ?? 'us-east-1',
  };
}

export class S3Storage implements Storage {
  readonly kind = 's3' as const;
  constructor(readonly options: S3Options) {}
  put(_key: string, _body: AsyncIterable<Uint8Array>): Promise<void> {
    throw new Error('not yet');
  }
  read(_key: string, _range?: ByteRange): Promise<Readable> {
    throw new Error('not yet');
  }
  remove(_key: string): Promise<void> {
    throw new Error('not yet');
  }
  createMultipart(_key: string): Promise<string> {
    throw new Error('not yet');
  }
  partUrl(): Promise<string> {
    throw new Error('not yet');
  }
  listParts(): Promise<StoredPart[]> {
    throw new Error('not yet');
  }
  completeMultipart(): Promise<void> {
    throw new Error('not yet');
  }
  abortMultipart(): Promise<void> {
    throw new Error('not yet');
  }
  downloadUrl(_key: string, _info: DownloadInfo): Promise<string> {
    throw new Error('not yet');
  }
}
