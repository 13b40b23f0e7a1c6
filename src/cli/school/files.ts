// `files upload FILE --purpose P` and `files download ID [-o FILE]`. An upload sends its parts
// four at a time with a progress bar, and remembers its upload id (in the CLI's config folder,
// by the file's SHA-256) until it completes: run the same command again after an interruption
// and only the parts the server does not hold yet are sent.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import cliProgress from 'cli-progress';
import { idempotencyKey, type V3Client } from '../../client/index.ts';
import type { Io } from './io.ts';
import { getToFile, putRange } from './transfer.ts';

const PARALLEL = 4;

const TYPES: Record<string, string> = {
  '.csv': 'text/csv',
  '.txt': 'text/plain',
  '.json': 'application/json',
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.zip': 'application/zip',
};

export interface UploadOptions {
  client: V3Client;
  file: string;
  purpose: 'import' | 'attachment';
  contentType?: string;
  /** Where interrupted uploads are remembered. */
  stateDir: string;
  io: Io;
}

async function hashRange(file: string, start = 0, size?: number): Promise<string> {
  const hash = crypto.createHash('sha256');
  if (size === 0) return hash.digest('hex');
  const end = size === undefined ? undefined : start + size - 1;
  for await (const c of fs.createReadStream(file, { start, end })) hash.update(c as Buffer);
  return hash.digest('hex');
}

export function fail(what: string, error: any, status: number): never {
  throw new Error(`${what}: ${error?.error?.code ?? status}: ${error?.error?.message ?? ''}`);
}

/** Uploads the file and returns its file id. */
export async function upload(o: UploadOptions): Promise<string> {
  const size = fs.statSync(o.file).size;
  const sha256 = await hashRange(o.file);
  const stateFile = path.join(o.stateDir, 'uploads', `${sha256}-${o.purpose}.json`);
  const c = o.client;
  let upload: any;
  let firstUrls: any[] = [];
  if (fs.existsSync(stateFile)) {
    const { id } = JSON.parse(fs.readFileSync(stateFile, 'utf8'));
    const got = await c.GET('/uploads/{upload_id}', { params: { path: { upload_id: id } } });
    if (got.data?.data.status === 'pending') {
      upload = got.data.data;
      o.io.err(`Resuming upload ${id}.`);
    }
  }
  if (!upload) {
    const created = await c.POST('/uploads', {
      params: { header: { 'Idempotency-Key': idempotencyKey() } },
      body: {
        purpose: o.purpose,
        filename: path.basename(o.file),
        content_type:
          o.contentType ?? TYPES[path.extname(o.file).toLowerCase()] ?? 'application/octet-stream',
        size,
        sha256,
      },
    });
    if (!created.data) fail('create upload', created.error, created.response.status);
    upload = created.data.data;
    firstUrls = created.data.part_urls;
    fs.mkdirSync(path.dirname(stateFile), { recursive: true });
    fs.writeFileSync(stateFile, JSON.stringify({ id: upload.id }));
  }
  const id: string = upload.id;
  const partSize: number = upload.part_size;
  const count: number = upload.parts_count;
  const partBytes = (n: number) => Math.min(partSize, size - (n - 1) * partSize);

  const listed = await c.GET('/uploads/{upload_id}/parts', { params: { path: { upload_id: id } } });
  if (!listed.data) fail('list parts', listed.error, listed.response.status);
  const held = new Map(
    listed.data.data.filter((p) => p.size === partBytes(p.number)).map((p) => [p.number, p.etag]),
  );
  const todo = Array.from({ length: count }, (_, i) => i + 1).filter((n) => !held.has(n));
  const urls = new Map<number, string>(firstUrls.map((u) => [u.number, u.url]));

  const bar = new cliProgress.SingleBar(
    {
      format: '{bar} {percentage}% | {value}/{total} bytes | ETA {eta_formatted}',
      stream: o.io.bars ?? process.stderr,
      noTTYOutput: true,
      notTTYSchedule: 2000,
    },
    cliProgress.Presets.shades_classic,
  );
  const already = [...held.keys()].reduce((s, n) => s + partBytes(n), 0);
  bar.start(size, already);
  let next = 0;
  const urlFor = async (n: number) => {
    if (!urls.has(n)) {
      // Fresh URLs for the next hundred parts to send (each is valid an hour).
      const batch = todo.filter((m) => m >= n && !urls.has(m)).slice(0, 100);
      const got = await c.POST('/uploads/{upload_id}/parts', {
        params: { path: { upload_id: id }, header: { 'Idempotency-Key': idempotencyKey() } },
        body: { part_numbers: batch },
      });
      if (!got.data) fail('part URLs', got.error, got.response.status);
      for (const u of got.data.data) urls.set(u.number, u.url);
    }
    return urls.get(n)!;
  };
  const worker = async () => {
    while (next < todo.length) {
      const n = todo[next++]!;
      const etag = await putRange(await urlFor(n), o.file, (n - 1) * partSize, partBytes(n), (b) =>
        bar.increment(b),
      );
      held.set(n, etag);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(PARALLEL, todo.length) }, worker));
  } finally {
    bar.stop();
  }
  const parts = [];
  for (let n = 1; n <= count; n++) {
    parts.push({
      number: n,
      etag: held.get(n)!,
      sha256: await hashRange(o.file, (n - 1) * partSize, partBytes(n)),
    });
  }
  const done = await c.POST('/uploads/{upload_id}/completions', {
    params: { path: { upload_id: id }, header: { 'Idempotency-Key': idempotencyKey() } },
    body: { parts },
  });
  if (!done.data) fail('complete upload', done.error, done.response.status);
  fs.rmSync(stateFile, { force: true });
  return done.data.data.file_id!;
}

/** Downloads a file to `out` (default: its own name) and prints the path written. */
export async function download(
  client: V3Client,
  id: string,
  out: string | undefined,
  io: Io,
): Promise<number> {
  const file = await client.GET('/files/{file_id}', { params: { path: { file_id: id } } });
  if (!file.data) fail('file', file.error, file.response.status);
  const link = await client.POST('/files/{file_id}/download-links', {
    params: { path: { file_id: id }, header: { 'Idempotency-Key': idempotencyKey() } },
  });
  if (!link.data) fail('download link', link.error, link.response.status);
  const target = out ?? file.data.data.filename;
  const bar = new cliProgress.SingleBar(
    {
      format: '{bar} {percentage}% | {value}/{total} bytes | ETA {eta_formatted}',
      stream: io.bars ?? process.stderr,
      noTTYOutput: true,
      notTTYSchedule: 2000,
    },
    cliProgress.Presets.shades_classic,
  );
  try {
    await getToFile(
      link.data.data.url,
      target,
      (total) => bar.start(total, 0),
      (b) => bar.increment(b),
    );
  } finally {
    bar.stop();
  }
  io.out(target);
  return 0;
}
