// Boots the app for the file tests on one store: local disk in a temporary FILES_DIR, or S3 on an
// s3rver emulator this helper starts on 127.0.0.1 (FILES_BACKEND=s3 picks it).
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { boot, type Booted, type BootOptions } from './app.ts';
import { startS3, type S3Server } from './s3.ts';

export type Backend = 'local' | 's3';

export interface FilesBoot extends Booted {
  backend: Backend;
  filesDir: string;
  s3: S3Server | null;
}

export async function bootFiles(backend: Backend, options: BootOptions = {}): Promise<FilesBoot> {
  const filesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-files-'));
  const s3 = backend === 's3' ? await startS3() : null;
  const env: Record<string, string> = { FILES_DIR: filesDir, ...options.env };
  if (s3) env.STORAGE_URL = s3.storageUrl;
  const b = await boot({ ...options, env });
  return {
    ...b,
    backend,
    filesDir,
    s3,
    async close() {
      await b.close();
      await s3?.close();
      fs.rmSync(filesDir, { recursive: true, force: true });
    },
  };
}

/** The backend a file suite runs on: FILES_BACKEND=s3 runs it against the emulator. */
export const backendFromEnv = (): Backend => (process.env.FILES_BACKEND === 's3' ? 's3' : 'local');

export const sha256 = (b: Uint8Array) => crypto.createHash('sha256').update(b).digest('hex');

export async function* chunks(...parts: (string | Uint8Array)[]) {
  for (const p of parts) yield typeof p === 'string' ? new TextEncoder().encode(p) : p;
}

export async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of stream) out.push(Buffer.from(c));
  return Buffer.concat(out);
}

/** The AppError code a promise rejects with. */
export async function rejectsWith(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
  return 'resolved';
}
