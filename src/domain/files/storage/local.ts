// Local-disk store under FILES_DIR: objects in objects/, the parts of unfinished uploads in
// multipart/<id>/. Part URLs and download links point at this server (src/http/storage.ts), signed
// by UrlSigner. Writes go to a temporary name first and are renamed, so a reader never sees half
// a part or object.
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomHex } from '../../shared/ids.ts';
import { guarded, integrityMismatch } from './errors.ts';
import type { UrlSigner } from './signer.ts';
import type { ByteRange, DownloadInfo, Expiry, PartTag, Storage, StoredPart } from './types.ts';

const KEY = /^[a-z0-9][a-z0-9/_-]{0,199}$/;

export class PartTooLarge extends Error {}

export class LocalStorage implements Storage {
  readonly kind = 'local' as const;
  readonly dir: string;
  readonly signer: UrlSigner;

  constructor(dir: string, signer: UrlSigner) {
    this.dir = dir;
    this.signer = signer;
  }

  put(key: string, body: AsyncIterable<Uint8Array>): Promise<void> {
    return guarded(() => this.writeAtomically(this.objectPath(key), Readable.from(body)));
  }

  read(key: string, range?: ByteRange): Promise<Readable> {
    return guarded(async () => {
      const file = this.objectPath(key);
      // Open first, so a missing or unreadable object fails here rather than mid-response.
      const handle = await fsp.open(file, 'r');
      return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
    });
  }

  remove(key: string): Promise<void> {
    return guarded(() => fsp.rm(this.objectPath(key), { force: true }));
  }

  exists(key: string): Promise<boolean> {
    return guarded(async () => {
      try {
        await fsp.stat(this.objectPath(key));
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw err;
      }
    });
  }

  createMultipart(key: string): Promise<string> {
    return guarded(async () => {
      const id = `${key.replace(/\//g, '_')}-${randomHex(8)}`;
      await fsp.mkdir(this.partsDir(id), { recursive: true });
      return id;
    });
  }

  async partUrl(
    _key: string,
    _multipartId: string,
    ref: { uploadId: number; number: number; size: number },
    expiry: Expiry,
  ): Promise<string> {
    const p = `/storage/uploads/${ref.uploadId}/parts/${ref.number}`;
    return this.signer.url('PUT', p, expiry.expiresAt);
  }

  /**
   * Streams one part to disk and returns its ETag (the MD5 of its bytes, quoted, as S3 answers);
   * more than `maxSize` bytes stops the write (PartTooLarge). The ETag is kept in the file name,
   * so the part and its ETag appear together.
   */
  async writePart(
    multipartId: string,
    number: number,
    body: Readable,
    maxSize: number,
  ): Promise<string> {
    let size = 0;
    const md5 = crypto.createHash('md5');
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        md5.update(chunk);
        if (size > maxSize) done(new PartTooLarge());
        else done(null, chunk);
      },
    });
    const dir = this.partsDir(multipartId);
    const staged = path.join(dir, `${number}.${randomHex(6)}.staged`);
    await this.writeAtomically(staged, body, counter);
    const etag = md5.digest('hex');
    // A part sent again replaces the earlier one.
    for (const old of await partFiles(dir)) if (old.number === number) await fsp.rm(old.file);
    await fsp.rename(staged, path.join(dir, `${number}-${etag}.part`));
    return `"${etag}"`;
  }

  listParts(_key: string, multipartId: string): Promise<StoredPart[]> {
    return guarded(async () => {
      const parts: StoredPart[] = [];
      for (const p of await partFiles(this.partsDir(multipartId))) {
        const st = await fsp.stat(p.file);
        parts.push({ number: p.number, size: st.size, etag: `"${p.etag}"` });
      }
      return parts.sort((a, b) => a.number - b.number);
    });
  }

  completeMultipart(key: string, multipartId: string, tags: PartTag[]): Promise<void> {
    return guarded(async () => {
      const dir = this.partsDir(multipartId);
      const stored = new Map((await partFiles(dir)).map((p) => [p.number, p]));
      // As S3 does: every named part must be there with the ETag its PUT answered.
      const files = tags.map((t) => {
        const p = stored.get(t.number);
        if (!p || `"${p.etag}"` !== normalizeEtag(t.etag)) {
          throw integrityMismatch('part_not_uploaded', `Part ${t.number} is not uploaded.`);
        }
        return p.file;
      });
      async function* joined() {
        for (const file of files) yield* fs.createReadStream(file);
      }
      await this.writeAtomically(this.objectPath(key), Readable.from(joined()));
      await fsp.rm(dir, { recursive: true, force: true });
    });
  }

  abortMultipart(_key: string, multipartId: string): Promise<void> {
    return guarded(() => fsp.rm(this.partsDir(multipartId), { recursive: true, force: true }));
  }

  async downloadUrl(_key: string, info: DownloadInfo, expiry: Expiry): Promise<string> {
    return this.signer.url('GET', `/storage/files/${info.fileId}`, expiry.expiresAt);
  }

  private objectPath(key: string): string {
    if (!KEY.test(key) || key.includes('..')) throw new Error(`bad storage key ${key}`);
    return path.join(this.dir, 'objects', key);
  }

  private partsDir(multipartId: string): string {
    if (!KEY.test(multipartId)) throw new Error(`bad multipart id ${multipartId}`);
    return path.join(this.dir, 'multipart', multipartId);
  }

  private async writeAtomically(target: string, body: Readable, through?: Transform) {
    await fsp.mkdir(path.dirname(target), { recursive: true });
    const temp = `${target}.${randomHex(6)}.tmp`;
    try {
      if (through) await pipeline(body, through, fs.createWriteStream(temp));
      else await pipeline(body, fs.createWriteStream(temp));
      await fsp.rename(temp, target);
    } catch (err) {
      await fsp.rm(temp, { force: true });
      throw err;
    }
  }
}

async function partFiles(dir: string) {
  const names = await fsp.readdir(dir).catch((err) => {
    if (err.code === 'ENOENT') return [] as string[];
    throw err;
  });
  const out: { number: number; etag: string; file: string }[] = [];
  for (const name of names) {
    const m = /^([0-9]+)-([0-9a-f]{32})\.part$/.exec(name);
    if (m) out.push({ number: Number(m[1]), etag: m[2]!, file: path.join(dir, name) });
  }
  return out;
}

/** Clients may send an ETag with or without its quotes. */
export const normalizeEtag = (etag: string) => `"${etag.replace(/"/g, '')}"`;
