// S3-compatible object storage (STORAGE_URL=s3://[key:secret@]bucket?endpoint=...&region=...).
// Clients send parts straight to the store through URLs it presigns itself; objects are read and
// written as streams. Credentials come from the URL or, without one, the SDK's usual chain
// (AWS_ACCESS_KEY_ID, profiles, instance roles). `connect_timeout_ms` and `timeout_ms` bound how
// long a store that does not answer can hold a request (defaults 5 s and 30 s).
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { guarded } from './errors.ts';
import {
  contentDisposition,
  type ByteRange,
  type DownloadInfo,
  type Expiry,
  type PartTag,
  type Storage,
  type StoredPart,
} from './types.ts';

export interface S3Options {
  bucket: string;
  endpoint: string | undefined;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  /** Connecting to the store. */
  connectTimeoutMs: number;
  /** Waiting for a response's headers, and for each next byte of a body. */
  timeoutMs: number;
}

export function parseStorageUrl(url: string): S3Options {
  const u = new URL(url);
  if (u.protocol !== 's3:' || !u.hostname) {
    throw new Error('STORAGE_URL must look like s3://bucket?endpoint=...&region=...');
  }
  return {
    bucket: u.hostname,
    endpoint: u.searchParams.get('endpoint') ?? undefined,
    region: u.searchParams.get('region') ?? 'us-east-1',
    credentials: u.username
      ? {
          accessKeyId: decodeURIComponent(u.username),
          secretAccessKey: decodeURIComponent(u.password),
        }
      : undefined,
    connectTimeoutMs: millis(u, 'connect_timeout_ms', 5_000),
    timeoutMs: millis(u, 'timeout_ms', 30_000),
  };
}

function millis(u: URL, name: string, fallback: number): number {
  const raw = u.searchParams.get(name);
  if (raw === null) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) {
    throw new Error(`STORAGE_URL: ${name} must be a positive number of milliseconds`);
  }
  return n;
}

/** What put() buffers before sending a part: bounded memory whatever the object's size. */
const PUT_PART = 8 * 1024 * 1024;

export class S3Storage implements Storage {
  readonly kind = 's3' as const;
  private readonly client: S3Client;
  private readonly bucket: string;

  constructor(options: S3Options) {
    this.bucket = options.bucket;
    this.client = new S3Client({
      region: options.region,
      endpoint: options.endpoint,
      // Path-style URLs work with any endpoint (an emulator, MinIO) without DNS per bucket.
      forcePathStyle: true,
      credentials: options.credentials,
      maxAttempts: 2,
      // A store that does not answer must fail the request (503), not hang it. The SDK's
      // requestTimeout (until the response's headers) only logs a warning unless told to throw;
      // socketTimeout fails a request, or a body being streamed, idle that long.
      requestHandler: {
        connectionTimeout: options.connectTimeoutMs,
        requestTimeout: options.timeoutMs,
        throwOnRequestTimeout: true,
        socketTimeout: options.timeoutMs,
      },
    });
  }

  put(key: string, body: AsyncIterable<Uint8Array>): Promise<void> {
    return guarded(async () => {
      const Bucket = this.bucket;
      let buffered: Buffer[] = [];
      let length = 0;
      let multipartId: string | undefined;
      const tags: PartTag[] = [];
      const flush = async () => {
        multipartId ??= await this.createMultipart(key);
        const number = tags.length + 1;
        const Body = Buffer.concat(buffered, length);
        buffered = [];
        length = 0;
        const res = await this.client.send(
          new UploadPartCommand({
            Bucket,
            Key: key,
            UploadId: multipartId,
            PartNumber: number,
            Body,
          }),
        );
        tags.push({ number, etag: res.ETag ?? '' });
      };
      try {
        for await (const chunk of body) {
          buffered.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          length += chunk.byteLength;
          if (length >= PUT_PART) await flush();
        }
        if (multipartId === undefined) {
          const Body = Buffer.concat(buffered, length);
          await this.client.send(new PutObjectCommand({ Bucket, Key: key, Body }));
          return;
        }
        if (length > 0) await flush();
        await this.completeMultipart(key, multipartId, tags);
      } catch (err) {
        if (multipartId) await this.abortMultipart(key, multipartId).catch(() => undefined);
        throw err;
      }
    });
  }

  read(key: string, range?: ByteRange): Promise<Readable> {
    return guarded(async () => {
      const res = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
        }),
      );
      return res.Body as Readable;
    });
  }

  remove(key: string): Promise<void> {
    return guarded(async () => {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    });
  }

  exists(key: string): Promise<boolean> {
    return guarded(async () => {
      try {
        await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
        return true;
      } catch (err) {
        // HEAD has no body: a missing object is a bare 404.
        const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
        if (e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404) return false;
        throw err;
      }
    });
  }

  createMultipart(key: string): Promise<string> {
    return guarded(async () => {
      const res = await this.client.send(
        new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key }),
      );
      return res.UploadId!;
    });
  }

  partUrl(
    key: string,
    multipartId: string,
    ref: { uploadId: number; number: number; size: number },
    expiry: Expiry,
  ): Promise<string> {
    const command = new UploadPartCommand({
      Bucket: this.bucket,
      Key: key,
      UploadId: multipartId,
      PartNumber: ref.number,
    });
    return guarded(() => getSignedUrl(this.client, command, { expiresIn: expiry.seconds }));
  }

  listParts(key: string, multipartId: string): Promise<StoredPart[]> {
    return guarded(async () => {
      const parts: StoredPart[] = [];
      let marker: string | undefined;
      for (;;) {
        const res = await this.client
          .send(
            new ListPartsCommand({
              Bucket: this.bucket,
              Key: key,
              UploadId: multipartId,
              PartNumberMarker: marker,
            }),
          )
          .catch((err) => {
            // An upload the store no longer has (aborted, completed) holds no parts.
            if ((err as { name?: string }).name === 'NoSuchUpload') return { Parts: [] } as any;
            throw err;
          });
        for (const p of res.Parts ?? []) {
          parts.push({ number: p.PartNumber!, size: Number(p.Size), etag: p.ETag ?? '' });
        }
        if (!res.IsTruncated) return parts;
        marker = res.NextPartNumberMarker;
      }
    });
  }

  completeMultipart(key: string, multipartId: string, parts: PartTag[]): Promise<void> {
    return guarded(async () => {
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: multipartId,
          MultipartUpload: {
            Parts: parts.map((p) => ({ PartNumber: p.number, ETag: p.etag })),
          },
        }),
      );
    });
  }

  abortMultipart(key: string, multipartId: string): Promise<void> {
    return guarded(async () => {
      try {
        await this.client.send(
          new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: multipartId }),
        );
      } catch (err) {
        if ((err as { name?: string }).name !== 'NoSuchUpload') throw err;
      }
    });
  }

  downloadUrl(key: string, info: DownloadInfo, expiry: Expiry): Promise<string> {
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ResponseContentType: info.contentType,
      ResponseContentDisposition: contentDisposition(info.filename),
    });
    return guarded(() => getSignedUrl(this.client, command, { expiresIn: expiry.seconds }));
  }

  destroy(): void {
    this.client.destroy();
  }
}
