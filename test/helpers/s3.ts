// An S3-compatible server for the tests: s3rver on 127.0.0.1, in a temporary directory. s3rver
// lacks two calls of the multipart API that the S3 store uses, ListParts and
// AbortMultipartUpload; this helper answers them from s3rver's own part files, in the shapes of
// the S3 API reference, so the same file tests run against it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

export const BUCKET = 'school-files';

export interface S3Server {
  endpoint: string;
  port: number;
  storageUrl: string;
  stop(): Promise<void>;
  /** Starts it again on the same port and directory (after stop). */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startS3(): Promise<S3Server> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'school-s3-'));
  let port = 0;
  let server: any;
  const run = async () => {
    server = new S3rver({
      address: '127.0.0.1',
      port,
      silent: true,
      directory,
      configureBuckets: [{ name: BUCKET, configs: [] }],
    });
    server.middleware.unshift(multipartShim(server));
    const address = await server.run();
    port = address.port;
  };
  await run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    port,
    storageUrl: `s3://S3RVER:S3RVER@${BUCKET}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1`,
    async stop() {
      server.httpServer.closeAllConnections?.();
      await server.close();
    },
    start: run,
    async close() {
      server.httpServer.closeAllConnections?.();
      await server.close().catch(() => undefined);
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;

function multipartShim(server: any) {
  return async (ctx: any, next: () => Promise<void>) => {
    const m = /^\/([^/]+)\/(.+)$/.exec(ctx.path);
    const uploadId = ctx.query.uploadId;
    const ours =
      (ctx.method === 'GET' || ctx.method === 'DELETE') && ctx.query.partNumber === undefined;
    if (!m || typeof uploadId !== 'string' || !ours) return next();
    const dir = path.join(server.store.getResourcePath(m[1], undefined, 'uploads'), uploadId);
    ctx.type = 'application/xml';
    if (!fs.existsSync(dir)) {
      ctx.status = 404;
      ctx.body = xml(
        '<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>',
      );
      return;
    }
    if (ctx.method === 'DELETE') {
      fs.rmSync(dir, { recursive: true, force: true });
      ctx.status = 204;
      ctx.body = null;
      return;
    }
    const parts = fs
      .readdirSync(dir)
      .filter((n) => /^[0-9]+$/.test(n) && fs.existsSync(path.join(dir, `${n}.md5`)))
      .map(Number)
      .sort((a, b) => a - b)
      .map((n) => {
        const st = fs.statSync(path.join(dir, String(n)));
        const md5 = fs.readFileSync(path.join(dir, `${n}.md5`), 'utf8');
        return `<Part><PartNumber>${n}</PartNumber><LastModified>${st.mtime.toISOString()}</LastModified><ETag>"${md5}"</ETag><Size>${st.size}</Size></Part>`;
      });
    ctx.status = 200;
    ctx.body = xml(
      `<ListPartsResult><Bucket>${m[1]}</Bucket><Key>${m[2]}</Key><UploadId>${uploadId}</UploadId><MaxParts>10000</MaxParts><IsTruncated>false</IsTruncated>${parts.join('')}</ListPartsResult>`,
    );
  };
}
