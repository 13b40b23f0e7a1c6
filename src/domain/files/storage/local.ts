// Local-disk store under FILES_DIR: objects in objects/, the parts of unfinished uploads in
// multipart/<id>/. Part URLs and download links point at this server (src/http/storage.ts), signed
// by UrlSigner. Writes go to a temporary name first and are renamed, so a reader never sees half
// a part or object.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomHex } from '../../shared/ids.ts';
import { guarded } from './errors.ts';
import type { UrlSigner } from './signer.ts';
import type { ByteRange, DownloadInfo, Storage, StoredPart } from './types.ts';

const KEY = /^[a-z0-9][a-z0-9/_-]{0,199}$/;

export class PartTooLarge extends Error {}

export class LocalStorage implements Storage {
  readonly kind = 'local' as const;

  constructor(
    readonly dir: string,
    private readonly signer: UrlSigner,
  ) {}

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
    expiresAt: Date,
  ): Promise<string> {
    return this.signer.url(
      'PUT',
      `/storage/uploads/${ref.uploadId}/parts/${ref.number}`,
      expiresAt,
    );
  }

  /** Streams one part to disk; more than `maxSize` bytes stops the write (PartTooLarge). */
  writePart(multipartId: string, number: number, body: Readable, maxSize: number): Promise<number> {
    let size = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > maxSize) done(new PartTooLarge());
        else done(null, chunk);
      },
    });
    const target = path.join(this.partsDir(multipartId), `${number}.part`);
    return this.writeAtomically(target, body, counter).then(() => size);
  }

  listParts(_key: string, multipartId: string): Promise<StoredPart[]> {
    return guarded(async () => {
      const dir = this.partsDir(multipartId);
      const names = await fsp.readdir(dir).catch((err) => {
        if (err.code === 'ENOENT') return [] as string[];
        throw err;
      });
      const parts: StoredPart[] = [];
      for (const name of names) {
        const m = /^([0-9]+)\.part$/.exec(name);
        if (!m) continue;
        const st = await fsp.stat(path.join(dir, name));
        parts.push({ number: Number(m[1]), size: st.size });
      }
      return parts.sort((a, b) => a.number - b.number);
    });
  }

  completeMultipart(key: string, multipartId: string, count: number): Promise<void> {
    return guarded(async () => {
      const dir = this.partsDir(multipartId);
      async function* joined() {
        for (let n = 1; n <= count; n++) yield* fs.createReadStream(path.join(dir, `${n}.part`));
      }
      await this.writeAtomically(this.objectPath(key), Readable.from(joined()));
      await fsp.rm(dir, { recursive: true, force: true });
    });
  }

  abortMultipart(_key: string, multipartId: string): Promise<void> {
    return guarded(() => fsp.rm(this.partsDir(multipartId), { recursive: true, force: true }));
  }

  async downloadUrl(_key: string, info: DownloadInfo, expiresAt: Date): Promise<string> {
    return this.signer.url('GET', `/storage/files/${info.fileId}`, expiresAt);
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
