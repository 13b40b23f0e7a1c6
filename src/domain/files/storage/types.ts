// The one small interface both stores implement: finished objects (put, read, delete), S3-style
// multipart uploads whose parts the client sends straight to the store, and signed URLs. Every
// byte moves as a stream; no method holds a whole part or object in memory.
import type { Readable } from 'node:stream';

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export interface StoredPart {
  number: number;
  size: number;
  /** What the store answered the part's PUT with (S3: the part's MD5, quoted). */
  etag: string;
}

/** A part named at completion: its number and the ETag its PUT answered. */
export interface PartTag {
  number: number;
  etag: string;
}

/** When a signed URL stops working; S3 presigns with a lifetime rather than a moment. */
export interface Expiry {
  expiresAt: Date;
  seconds: number;
}

export interface SignedUrl {
  url: string;
  expiresAt: Date;
}

export interface DownloadInfo {
  filename: string;
  contentType: string;
  /** Local disk serves through this server and needs the file's id and size. */
  fileId: number;
  size: number;
}

export interface Storage {
  readonly kind: 'local' | 's3';
  /** Writes a whole object from a stream (exports). */
  put(key: string, body: AsyncIterable<Uint8Array>): Promise<void>;
  /** Streams an object, or the inclusive byte range of it. */
  read(key: string, range?: ByteRange): Promise<Readable>;
  /** Deletes an object; a missing one is not an error. */
  remove(key: string): Promise<void>;
  /** Whether the object exists (a join whose answer was lost may have made it). */
  exists(key: string): Promise<boolean>;

  /** Starts a multipart upload; returns the store's id for it. */
  createMultipart(key: string): Promise<string>;
  /** A URL the client PUTs one part's bytes to, valid until expiresAt. */
  partUrl(
    key: string,
    multipartId: string,
    ref: { uploadId: number; number: number; size: number },
    expiry: Expiry,
  ): Promise<string>;
  /** The parts the store holds, by number. */
  listParts(key: string, multipartId: string): Promise<StoredPart[]>;
  /**
   * Joins the parts, in order, into the object `key`; the parts are gone afterwards. A part
   * missing or with another ETag is 422 upload_integrity_mismatch and nothing is joined.
   */
  completeMultipart(key: string, multipartId: string, parts: PartTag[]): Promise<void>;
  /** Drops the parts; a finished or missing upload is not an error. */
  abortMultipart(key: string, multipartId: string): Promise<void>;
  /** A URL that serves the object with the file's type and name, valid until expiresAt. */
  downloadUrl(key: string, info: DownloadInfo, expiry: Expiry): Promise<string>;
}

/** Content-Disposition with an ASCII fallback and the UTF-8 name (RFC 6266 / 5987). */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
