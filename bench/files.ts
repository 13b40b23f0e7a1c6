// A 256 MiB upload through the part URLs (the CLI's upload: four parts at a time, streamed from
// disk), completion included (the server reads the joined file back to check it), then its
// download. Prints one JSON line on stdout:
//   {"backend","mib","uploadMs","uploadMBps","downloadMs","downloadMBps","peakRssMiB"}
// peakRssMiB is the process's peak resident set (server, client and, for s3, the s3rver emulator
// all run in this one process): far below the file's size means nothing held the file in memory.
//
//   node bench/files.ts [backend=local|s3] [mib=256]
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { createClient } from '../src/client/index.ts';
import { download, upload } from '../src/cli/school/files.ts';
import { startS3 } from '../test/helpers/s3.ts';
import { freePort } from '../test/helpers/app.ts';

const backend = process.argv[2] ?? 'local';
const MIB = Number(process.argv[3] ?? 256);
if (backend !== 'local' && backend !== 's3') throw new Error('backend: local or s3');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-files-'));
const s3 = backend === 's3' ? await startS3() : null;
// The local store signs URLs with PUBLIC_BASE_URL, so the server's port is chosen first.
const port = await freePort();
const baseUrl = `http://127.0.0.1:${port}`;
const config = loadConfig({
  DATABASE_URL: `sqlite:${path.join(dir, 'files.db')}`,
  FILES_DIR: path.join(dir, 'files'),
  STORAGE_URL: s3?.storageUrl ?? '',
  SECRETS_KEY: crypto.randomBytes(32).toString('base64url'),
  LOG_LEVEL: 'silent',
  PORT: String(port),
  PUBLIC_BASE_URL: baseUrl,
  WORKERS: 'false',
  RATE_LIMIT_SOURCE: '100000000',
  RATE_LIMIT_ACCOUNT: '100000000',
  RATE_LIMIT_CREDENTIAL: '100000000',
});
const app = await createApp(config, { logger: createLogger('silent') });
await app.listen(port, '127.0.0.1');
const { id: accountId } = await app.services.accounts.createAccount({ name: 'Bench school' });
const { secret } = await app.services.accounts.createRootCredential({
  accountId,
  permissions: ['*'],
  name: 'Bench',
});

const source = path.join(dir, 'upload.bin');
const block = crypto.randomBytes(MiB());
const w = fs.createWriteStream(source);
for (let i = 0; i < MIB; i++)
  if (!w.write(block)) await new Promise<void>((r) => w.once('drain', () => r()));
await new Promise<void>((r) => w.end(() => r()));

const client = createClient({ baseUrl, secret });
const out: string[] = [];
const io = {
  out: (l: string) => out.push(l),
  err: () => undefined,
  env: {},
  bars: new PassThrough().resume(),
};
const t0 = performance.now();
// upload() returns the file id (the command prints it).
const fileId = await upload({ client, file: source, purpose: 'attachment', stateDir: dir, io });
const uploadMs = performance.now() - t0;
const t1 = performance.now();
await download(client, fileId, path.join(dir, 'download.bin'), io);
const downloadMs = performance.now() - t1;

const bytes = MIB * MiB();
const mbps = (ms: number) => Math.round((bytes / 1e6 / (ms / 1000)) * 10) / 10;
await app.close();
await s3?.close();
fs.rmSync(dir, { recursive: true, force: true });
console.log(
  JSON.stringify({
    backend,
    mib: MIB,
    uploadMs: Math.round(uploadMs),
    uploadMBps: mbps(uploadMs),
    downloadMs: Math.round(downloadMs),
    downloadMBps: mbps(downloadMs),
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  }),
);

function MiB() {
  return 1024 * 1024;
}
