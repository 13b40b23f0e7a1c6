// A store that accepts connections and never answers (a proxy in front of s3rver that the test
// stalls) must fail requests with 503 storage_unavailable within the client's timeouts, and lose
// nothing already committed: every route that talks to the store, and an export's write.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey } from '../helpers/app.ts';
import { complete, createUpload, download, uploadParts } from '../helpers/files-suite.ts';
import { sha256, type FilesBoot } from '../helpers/files.ts';
import { waitFor } from '../helpers/operations.ts';
import { student } from '../helpers/sales.ts';
import { BUCKET, startS3, type S3Server } from '../helpers/s3.ts';
import { stallProxy, type StallProxy } from '../helpers/stall-proxy.ts';

// Short enough for a test; the defaults (5 s, 30 s) are the same code path.
const TIMEOUTS = 'connect_timeout_ms=500&timeout_ms=1000';

const t = suite<{ b: FilesBoot; proxy: StallProxy; s3: S3Server }>(
  'v3 files: a store that times out',
);
t.before(async (ctx) => {
  ctx.s3 = await startS3();
  ctx.proxy = await stallProxy(ctx.s3.port);
  const filesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-files-'));
  const endpoint = encodeURIComponent(ctx.proxy.endpoint);
  const b = await boot({
    env: {
      FILES_DIR: filesDir,
      STORAGE_URL: `s3://S3RVER:S3RVER@${BUCKET}?endpoint=${endpoint}&region=us-east-1&${TIMEOUTS}`,
    },
  });
  await b.app.startWorkers();
  ctx.b = { ...b, backend: 's3', filesDir, s3: ctx.s3 };
});
t.after(async (ctx) => {
  await ctx.b.close();
  await ctx.proxy.close();
  await ctx.s3.close();
});

const count = async (b: FilesBoot, table: string) =>
  Number((await b.app.db(table).count({ n: '*' }).first())!.n);

/** Runs `fn` and says how long it took, so a hung request shows as a failure, not a hang. */
async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const start = Date.now();
  const value = await fn();
  return [value, Date.now() - start];
}

t(
  'uploads: create and completion answer 503 in time; part URLs and reads need no store',
  async ({ b, proxy }) => {
    const bytes = Buffer.from('kept through a stalled store\n');
    const kept = await uploadParts(b, bytes);
    const keptFile = (await complete(b, kept.upload.id, kept.tags)).body.data.file_id;
    const { upload, tags } = await uploadParts(b, bytes);
    const uploads = await count(b, 'uploads');
    const files = await count(b, 'files');
    proxy.stall();
    try {
      const [created, createMs] = await timed(() => createUpload(b, bytes));
      assert.equal([created.status, created.body.error?.code], [503, 'storage_unavailable']);
      assert.ok(createMs < 15_000, `create took ${createMs} ms`);
      const [done, doneMs] = await timed(() => complete(b, upload.id, tags));
      assert.equal([done.status, done.body.error?.code], [503, 'storage_unavailable']);
      assert.ok(doneMs < 15_000, `completion took ${doneMs} ms`);
      // Part URLs and download links are presigned here, without a call to the store.
      const urls = await b.api('POST', `/api/v3/uploads/${upload.id}/parts`, {
        key: newKey(),
        body: { part_numbers: [1] },
      });
      assert.is(urls.status, 200, urls.text);
      const link = await b.api('POST', `/api/v3/files/${keptFile}/download-links`, {
        key: newKey(),
      });
      assert.is(link.status, 201, link.text);
      // Nothing committed moved: no upload row for the refused create, the other still pending.
      assert.is(await count(b, 'uploads'), uploads);
      assert.is(await count(b, 'files'), files);
      assert.is((await b.api('GET', `/api/v3/uploads/${upload.id}`)).body.data.status, 'pending');
    } finally {
      proxy.pass();
    }
    const done = await complete(b, upload.id, tags);
    assert.equal([done.status, done.body.data?.status], [200, 'completed'], done.text);
    const got = await download(b, keptFile);
    assert.is(sha256(got.bytes), sha256(bytes));
  },
);

t(
  "an export's write: the export fails with storage_unavailable; resumed, it completes",
  async ({ b, proxy }) => {
    const ana = await student(b, 'ana@example.com', 'Ana');
    const files = await count(b, 'files');
    proxy.stall();
    let exp: any;
    let op: any;
    try {
      const res = await b.api('POST', '/api/v3/exports', {
        key: newKey(),
        body: { resource: 'users', columns: ['id', 'email'] },
      });
      assert.is(res.status, 202, res.text);
      op = await waitFor(b, res.body.data.operation_id, undefined, undefined, 30_000);
      assert.is(op.status, 'failed');
      exp = (await b.api('GET', `/api/v3/exports/${res.body.data.id}`)).body.data;
      assert.equal(
        [exp.status, exp.failure_reason, exp.file_id],
        ['failed', 'storage_unavailable', null],
      );
      assert.is(await count(b, 'files'), files);
    } finally {
      proxy.pass();
    }
    const resumed = await b.api('POST', `/api/v3/operations/${op.id}/attempts`, { key: newKey() });
    assert.is(resumed.status, 202, resumed.text);
    const again = await waitFor(b, op.id, (o) => o.status === 'succeeded' || o.status === 'failed');
    assert.is(again.status, 'succeeded');
    const after = (await b.api('GET', `/api/v3/exports/${exp.id}`)).body.data;
    assert.equal([after.status, after.total], ['completed', 1]);
    const got = await download(b, after.file_id);
    assert.is(got.bytes.toString(), `id,email\n${ana.id},ana@example.com\n`);
  },
);

t.run();
