// Upload and file handlers: thin, over UploadsService and FilesService.
import type { components } from '../../../../generated/types.ts';
import type { FilesService, StoredFile } from '../../../domain/files/service.ts';
import type { PartUrl, Upload, UploadsService } from '../../../domain/files/uploads.ts';
import { fromId } from '../../../domain/shared/ids.ts';
import { AppError } from '../../../errors.ts';
import type { Handlers } from './types.ts';

type UploadOut = components['schemas']['Upload'];
type PartUrlOut = components['schemas']['UploadPartUrl'];
type FileOut = components['schemas']['File'];

export function presentUpload(u: Upload): UploadOut {
  return {
    object: 'upload',
    id: String(u.id),
    purpose: u.purpose,
    filename: u.filename,
    content_type: u.contentType,
    size: u.size,
    sha256: u.sha256,
    part_size: u.partSize,
    parts_count: u.partsCount,
    status: u.status,
    file_id: u.fileId === null ? null : String(u.fileId),
    failure_reason: u.failureReason,
    expires_at: u.expiresAt,
    created_at: u.createdAt,
    updated_at: u.updatedAt,
  };
}

const presentPartUrl = (p: PartUrl): PartUrlOut => ({
  object: 'upload_part_url',
  number: p.number,
  size: p.size,
  method: 'PUT',
  url: p.url,
  expires_at: p.expiresAt,
});

export const presentFile = (f: StoredFile): FileOut => ({
  object: 'file',
  id: String(f.id),
  purpose: f.purpose,
  filename: f.filename,
  content_type: f.contentType,
  size: f.size,
  sha256: f.sha256,
  created_at: f.createdAt,
});

const id = (s: string) => {
  const n = fromId(s);
  if (n === null) throw new AppError('not_found');
  return n;
};

export type FileOps =
  | 'createUpload'
  | 'getUpload'
  | 'cancelUpload'
  | 'completeUpload'
  | 'listUploadParts'
  | 'createUploadPartUrls'
  | 'getFile'
  | 'createFileDownloadLink';

export function fileHandlers(
  uploads: UploadsService,
  files: FilesService,
): Pick<Handlers, FileOps> {
  return {
    async createUpload({ auth, body, tx }) {
      const { upload, partUrls } = await uploads.create(
        auth.account.id,
        {
          purpose: body.purpose as Upload['purpose'],
          filename: body.filename,
          contentType: body.content_type,
          size: body.size,
          sha256: body.sha256,
          partSize: body.part_size,
        },
        { tx },
      );
      return {
        status: 201,
        body: { data: presentUpload(upload), part_urls: partUrls.map(presentPartUrl) },
        headers: { Location: `/api/v3/uploads/${upload.id}` },
      };
    },
    async getUpload({ auth, params }) {
      const u = await uploads.get(auth.account.id, id(params.upload_id));
      return { status: 200, body: { data: presentUpload(u) } };
    },
    async cancelUpload({ auth, params, tx }) {
      const u = await uploads.cancel(auth.account.id, id(params.upload_id), { tx });
      return { status: 200, body: { data: presentUpload(u) } };
    },
    async completeUpload({ auth, params, body }) {
      const u = await uploads.complete(auth.account.id, id(params.upload_id), body.parts);
      return { status: 200, body: { data: presentUpload(u) } };
    },
    async listUploadParts({ auth, params }) {
      const parts = await uploads.parts(auth.account.id, id(params.upload_id));
      return {
        status: 200,
        body: { data: parts.map((p) => ({ object: 'upload_part' as const, ...p })) },
      };
    },
    async createUploadPartUrls({ auth, params, body, tx }) {
      const urls = await uploads.partUrls(
        auth.account.id,
        id(params.upload_id),
        body.part_numbers,
        {
          tx,
        },
      );
      return { status: 200, body: { data: urls.map(presentPartUrl) } };
    },
    async getFile({ auth, params }) {
      const f = await files.get(auth.account.id, id(params.file_id));
      return { status: 200, body: { data: presentFile(f) } };
    },
    async createFileDownloadLink({ auth, params, tx }) {
      const link = await files.downloadLink(auth.account.id, id(params.file_id), { tx });
      return {
        status: 201,
        body: { data: { object: 'download_link', url: link.url, expires_at: link.expiresAt } },
      };
    },
  };
}
