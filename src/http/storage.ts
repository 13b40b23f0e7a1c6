// The local store's signed URLs, outside /api/v3 and its JSON pipeline: PUT a part's bytes,
// GET a file's bytes. The signature (method, path, expiry) is the authority, no credential. Bytes
// stream from the socket to disk and back; a part or file never sits in memory. Errors use the v3
// envelope. With S3 these URLs are not used: the store presigns its own.
import type { Context, Middleware } from 'koa';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import { negotiateLocale } from '../i18n/messages.ts';
import { partBytes } from '../domain/files/limits.ts';
import type { FilesService } from '../domain/files/service.ts';
import { integrityMismatch } from '../domain/files/storage/errors.ts';
import { LocalStorage, PartTooLarge } from '../domain/files/storage/local.ts';
import { contentDisposition } from '../domain/files/storage/types.ts';
import type { UploadsService } from '../domain/files/uploads.ts';
import { fromId } from '../domain/shared/ids.ts';
import { parseRange } from './range.ts';
import { renderError, toAppError } from './v3/render.ts';

const PART = /^\/storage\/uploads\/([^/]+)\/parts\/([^/]+)$/;
const FILE = /^\/storage\/files\/([^/]+)$/;

export interface StorageRouteDeps {
  files: FilesService;
  uploads: UploadsService;
  clock: Clock;
  onError: (err: unknown, ctx: Context) => void;
}

export function storageRoutes(deps: StorageRouteDeps): Middleware {
  const store = deps.files.storage;

  function checkSignature(ctx: Context, method: string): void {
    if (!(store instanceof LocalStorage)) throw new AppError('not_found');
    if (!store.signer.verify(method, ctx.path, ctx.query, deps.clock.now())) {
      throw new AppError('permission_denied', {
        details: [
          {
            code: 'permission_denied',
            reason: 'signature_invalid_or_expired',
            message: 'The signed URL is invalid or has expired.',
          },
        ],
      });
    }
  }

  async function putPart(ctx: Context, uploadId: number | null, n: number | null) {
    if (ctx.method !== 'PUT')
      throw new AppError('method_not_allowed', { headers: { Allow: 'PUT' } });
    checkSignature(ctx, 'PUT');
    const upload = uploadId === null ? null : await deps.uploads.forPart(uploadId);
    if (!upload || n === null || n > upload.partsCount) throw new AppError('not_found');
    const local = store as LocalStorage;
    const max = partBytes(upload.size, upload.partSize, n);
    try {
      const etag = await local.writePart(upload.storageUploadId, n, ctx.req, max);
      ctx.set('ETag', etag);
      ctx.body = '';
      ctx.status = 200;
    } catch (err) {
      if (err instanceof PartTooLarge) {
        // The rest of the body is not read; the connection closes after the answer.
        ctx.set('Connection', 'close');
        throw integrityMismatch('part_too_large', `Part ${n} has ${max} bytes.`);
      }
      throw err;
    }
  }

  async function getFile(ctx: Context, fileId: number | null) {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD')
      throw new AppError('method_not_allowed', { headers: { Allow: 'GET, HEAD' } });
    checkSignature(ctx, 'GET');
    const file = fileId === null ? null : await deps.files.findForDownload(fileId);
    if (!file) throw new AppError('not_found');
    const range = parseRange(ctx.get('range'), file.size);
    if (range === 'unsatisfiable') {
      ctx.set('Content-Range', `bytes */${file.size}`);
      throw new AppError('http_error', { status: 416 });
    }
    ctx.set('Accept-Ranges', 'bytes');
    ctx.set('Content-Disposition', contentDisposition(file.filename));
    ctx.set('Cache-Control', 'private, no-store');
    ctx.set('ETag', `"${file.sha256}"`);
    const stream =
      ctx.method === 'HEAD' ? null : await store.read(file.storageKey, range ?? undefined);
    ctx.status = range ? 206 : 200;
    if (range) ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${file.size}`);
    ctx.body = stream;
    ctx.type = file.contentType;
    ctx.length = range ? range.end - range.start + 1 : file.size;
  }

  return async function storage(ctx, next) {
    const part = PART.exec(ctx.path);
    const file = part ? null : FILE.exec(ctx.path);
    if (!part && !file) return next();
    ctx.state.route = part ? '/storage/uploads/:id/parts/:n' : '/storage/files/:id';
    try {
      if (part) await putPart(ctx, fromId(part[1]), fromId(part[2]));
      else await getFile(ctx, fromId(file![1]));
    } catch (err) {
      const e = toAppError(err);
      if (e.code === 'internal_error') deps.onError(err, ctx);
      renderError(ctx, e, negotiateLocale(ctx.get('accept-language')));
    }
  };
}
