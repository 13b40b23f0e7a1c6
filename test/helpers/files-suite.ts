// The file tests, run once per store (test/v3/files-local.test.ts, files-s3.test.ts): every rule
// of uploads, files and download links through HTTP, on SQLite and PostgreSQL.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { storageError } from '../../src/domain/files/storage/errors.ts';
import { COMPLETING_LEASE_MS } from '../../src/domain/files/uploads.ts';
import { credentialWith, newKey } from './app.ts';
import { bootFiles, sha256, type Backend, type FilesBoot } from './files.ts';
import { allItems, waitFor } from './operations.ts';

const MiB = 1024 * 1024;

export interface Declared {
  purpose?: string;
  filename?: string;
  content_type?: string;
  part_size?: number;
  sha256?: string;
  size?: number;
}

export async function createUpload(b: FilesBoot, bytes: Buffer, d: Declared = {}, secret?: string) {
  return b.api('POST', '/api/v3/uploads', {
    key: newKey(),
    secret,
    body: {
      purpose: d.purpose ?? 'attachment',
      filename: d.filename ?? 'notes.txt',
      content_type: d.content_type ?? 'text/plain',
      size: d.size ?? bytes.length,
      sha256: d.sha256 ?? sha256(bytes),
      ...(d.part_size ? { part_size: d.part_size } : {}),
    },
  });
}

export async function putPart(url: string, bytes: Buffer) {
  const res = await fetch(url, { method: 'PUT', body: new Uint8Array(bytes) });
  const text = await res.text();
  return { status: res.status, etag: res.headers.get('etag'), text };
}

export function slices(bytes: Buffer, partSize: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += partSize) out.push(bytes.subarray(at, at + partSize));
  return out;
}

/** Creates, PUTs every part (in parallel) and returns what completion needs. */
export async function uploadParts(b: FilesBoot, bytes: Buffer, d: Declared = {}) {
  const created = await createUpload(b, bytes, d);
  assert.is(created.status, 201, created.text);
  const upload = created.body.data;
  const parts = slices(bytes, upload.part_size);
  const tags = await Promise.all(
    created.body.part_urls.map(async (u: any) => {
      const r = await putPart(u.url, parts[u.number - 1]!);
      assert.is(r.status, 200, r.text);
      return { number: u.number, etag: r.etag!, sha256: sha256(parts[u.number - 1]!) };
    }),
  );
  return { upload, tags, created };
}

export const complete = (b: FilesBoot, id: string, parts: unknown[]) =>
  b.api('POST', `/api/v3/uploads/${id}/completions`, { key: newKey(), body: { parts } });

export async function download(b: FilesBoot, fileId: string, headers: Record<string, string> = {}) {
  const link = await b.api('POST', `/api/v3/files/${fileId}/download-links`, { key: newKey() });
  assert.is(link.status, 201, link.text);
  const res = await fetch(link.body.data.url, { headers });
  return { res, bytes: Buffer.from(await res.arrayBuffer()), link: link.body.data };
}

export function filesSuite(backend: Backend) {
  const t = suite<{ b: FilesBoot }>(`v3 uploads and files (${backend})`);
  t.before(async (ctx) => {
    ctx.b = await bootFiles(backend);
  });
  t.after(async (ctx) => ctx.b.close());

  t(
    'three calls: create (with part URLs), PUT, complete; then the file and its bytes',
    async ({ b }) => {
      const csv = Buffer.from('email,status\nana@example.com,active\nbia@example.com,active\n');
      const created = await createUpload(b, csv, {
        purpose: 'import',
        filename: 'students.csv',
        content_type: 'text/csv',
      });
      assert.is(created.status, 201);
      const u = created.body.data;
      assert.equal(
        { ...u, id: 'x', created_at: 'x', updated_at: 'x', expires_at: 'x' },
        {
          object: 'upload',
          id: 'x',
          purpose: 'import',
          filename: 'students.csv',
          content_type: 'text/csv',
          size: csv.length,
          sha256: sha256(csv),
          part_size: 8 * MiB,
          parts_count: 1,
          status: 'pending',
          file_id: null,
          failure_reason: null,
          expires_at: 'x',
          created_at: 'x',
          updated_at: 'x',
        },
      );
      assert.is(Date.parse(u.expires_at) - Date.parse(u.created_at), 24 * 3600_000);
      const [pu] = created.body.part_urls;
      assert.is(created.body.part_urls.length, 1);
      assert.equal([pu.number, pu.size, pu.method], [1, csv.length, 'PUT']);
      assert.is(Date.parse(pu.expires_at) - b.clock.now().getTime() <= 3600_000, true);
      const put = await putPart(pu.url, csv);
      assert.is(put.status, 200);
      assert.is(put.etag, `"${crypto.createHash('md5').update(csv).digest('hex')}"`);
      const done = await complete(b, u.id, [{ number: 1, etag: put.etag, sha256: sha256(csv) }]);
      assert.is(done.status, 200, done.text);
      assert.is(done.body.data.status, 'completed');
      const fileId = done.body.data.file_id;
      assert.ok(fileId);
      const file = await b.api('GET', `/api/v3/files/${fileId}`);
      assert.equal(file.body.data, {
        object: 'file',
        id: fileId,
        purpose: 'import',
        filename: 'students.csv',
        content_type: 'text/csv',
        size: csv.length,
        sha256: sha256(csv),
        created_at: file.body.data.created_at,
      });
      // The service other areas use reads the same bytes.
      const chunks: Buffer[] = [];
      for await (const c of await b.app.services.files.openRead(b.accountId, Number(fileId)))
        chunks.push(Buffer.from(c));
      assert.ok(Buffer.concat(chunks).equals(csv));
      // Completing again answers the same upload (a client that lost the answer retries).
      const again = await complete(b, u.id, [{ number: 1, etag: put.etag, sha256: sha256(csv) }]);
      assert.equal([again.status, again.body.data.file_id], [200, fileId]);
    },
  );

  t('download links: type, Content-Disposition, Range 206 and 416', async ({ b }) => {
    const bytes = Buffer.from('0123456789abcdefghij');
    const { upload, tags } = await uploadParts(b, bytes, { filename: 'résumé "v2".txt' });
    const fileId = (await complete(b, upload.id, tags)).body.data.file_id;
    const whole = await download(b, fileId);
    assert.is(whole.res.status, 200);
    assert.ok(whole.bytes.equals(bytes));
    assert.match(whole.res.headers.get('content-type')!, /^text\/plain/);
    assert.is(
      whole.res.headers.get('content-disposition'),
      `attachment; filename="r_sum_ _v2_.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22v2%22.txt`,
    );
    const expires = Date.parse(whole.link.expires_at) - b.clock.now().getTime();
    assert.ok(expires > 3590_000 && expires <= 3600_000);
    const part = await download(b, fileId, { range: 'bytes=5-9' });
    assert.is(part.res.status, 206);
    assert.is(part.bytes.toString(), '56789');
    assert.is(part.res.headers.get('content-range'), `bytes 5-9/${bytes.length}`);
    if (b.backend === 'local') {
      // s3rver reads `bytes=-3` as the first bytes (S3 itself serves the last three).
      const tail = await download(b, fileId, { range: 'bytes=-3' });
      assert.equal([tail.res.status, tail.bytes.toString()], [206, 'hij']);
    }
    const outside = await download(b, fileId, { range: `bytes=${bytes.length}-` });
    assert.is(outside.res.status, 416);
  });

  t(
    'several parts in parallel, listed as they arrive; each part and the whole checked',
    async ({ b }) => {
      const bytes = crypto.randomBytes(10 * MiB + 123);
      const created = await createUpload(b, bytes, {
        part_size: 5 * MiB,
        content_type: 'application/octet-stream',
      });
      const u = created.body.data;
      assert.equal([u.part_size, u.parts_count], [5 * MiB, 3]);
      assert.equal(
        created.body.part_urls.map((p: any) => p.size),
        [5 * MiB, 5 * MiB, 123],
      );
      const parts = slices(bytes, 5 * MiB);
      const first = await putPart(created.body.part_urls[0].url, parts[0]!);
      const listed = await b.api('GET', `/api/v3/uploads/${u.id}/parts`);
      assert.equal(listed.body.data, [
        { object: 'upload_part', number: 1, size: 5 * MiB, etag: first.etag },
      ]);
      // Fresh URLs for the rest, as a resuming client asks for them.
      const urls = await b.api('POST', `/api/v3/uploads/${u.id}/parts`, {
        key: newKey(),
        body: { part_numbers: [2, 3] },
      });
      assert.is(urls.status, 200);
      const rest = await Promise.all(
        urls.body.data.map((p: any) => putPart(p.url, parts[p.number - 1]!)),
      );
      const tags = [first, ...rest].map((r, i) => ({
        number: i + 1,
        etag: r.etag,
        sha256: sha256(parts[i]!),
      }));
      const done = await complete(b, u.id, tags);
      assert.is(done.status, 200, done.text);
      const got = await download(b, done.body.data.file_id);
      assert.is(sha256(got.bytes), sha256(bytes));
      const outOfRange = await b.api('POST', `/api/v3/uploads/${u.id}/parts`, {
        key: newKey(),
        body: { part_numbers: [1] },
      });
      assert.is(outOfRange.status, 422);
    },
  );

  t('creation limits per purpose', async ({ b }) => {
    const one = Buffer.from('a');
    const code = async (d: Declared) => {
      const r = await createUpload(b, one, d);
      return [r.status, r.body.error?.code, r.body.error?.details?.[0]?.reason];
    };
    assert.equal(await code({ purpose: 'export' }), [422, 'validation_failed', 'server_only']);
    assert.equal(await code({ purpose: 'import', content_type: 'image/png' }), [
      422,
      'validation_failed',
      'type_not_allowed',
    ]);
    assert.equal(await code({ purpose: 'import', content_type: 'text/csv', size: 512 * MiB + 1 }), [
      422,
      'validation_failed',
      'too_large',
    ]);
    const ok = await createUpload(b, one, {
      purpose: 'import',
      content_type: 'text/csv; charset=utf-8',
      size: 512 * MiB,
    });
    assert.is(ok.status, 201);
    assert.is(ok.body.part_urls.length, 64);
    assert.equal((await code({ size: 5 * 1024 * MiB + 1 }))[0], 422);
    assert.equal((await code({ part_size: 5 * MiB - 1 }))[0], 422);
  });

  t(
    'integrity: a wrong SHA-256 of the file fails the upload and creates no file',
    async ({ b }) => {
      const bytes = Buffer.from('hello world\n');
      const { upload, tags } = await uploadParts(b, bytes, { sha256: sha256(Buffer.from('x')) });
      const res = await complete(b, upload.id, tags);
      assert.is(res.status, 422);
      assert.is(res.body.error.code, 'upload_integrity_mismatch');
      assert.is(res.body.error.details[0].reason, 'sha256_mismatch');
      const after = (await b.api('GET', `/api/v3/uploads/${upload.id}`)).body.data;
      assert.equal(
        [after.status, after.file_id, after.failure_reason],
        ['failed', null, 'sha256_mismatch'],
      );
      assert.is(await fileCount(b), await fileCount(b));
    },
  );

  t("integrity: a part's SHA-256, the declared type and UTF-8 of a CSV", async ({ b }) => {
    const before = await fileCount(b);
    const reason = async (bytes: Buffer, d: Declared, tamper?: (tags: any[]) => void) => {
      const { upload, tags } = await uploadParts(b, bytes, d);
      tamper?.(tags);
      const r = await complete(b, upload.id, tags);
      assert.is(r.status, 422, r.text);
      assert.is(r.body.error.code, 'upload_integrity_mismatch');
      return r.body.error.details[0].reason;
    };
    const text = Buffer.from('plain words\n');
    assert.is(
      await reason(text, {}, (tags) => (tags[0].sha256 = sha256(Buffer.from('other')))),
      'part_sha256_mismatch',
    );
    // Text declared as a PNG; a PNG declared as a CSV; bytes that are not UTF-8 as a CSV.
    assert.is(await reason(text, { content_type: 'image/png' }), 'type_mismatch');
    const png = Buffer.concat([
      Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
      Buffer.alloc(64, 1),
    ]);
    assert.is(await reason(png, { purpose: 'import', content_type: 'text/csv' }), 'type_mismatch');
    assert.is(
      await reason(Buffer.from([0x61, 0x2c, 0xff, 0xfe, 0x0a]), {
        purpose: 'import',
        content_type: 'text/csv',
      }),
      'invalid_utf8',
    );
    assert.is(await fileCount(b), before);
    // The same PNG declared as what it is, and as the catch-all type, is accepted.
    for (const type of ['image/png', 'application/octet-stream']) {
      const { upload, tags } = await uploadParts(b, png, { content_type: type });
      assert.is((await complete(b, upload.id, tags)).status, 200);
    }
  });

  t(
    'a part missing, cut short or with another ETag: 422 and the upload stays pending',
    async ({ b }) => {
      const bytes = crypto.randomBytes(5 * MiB + 10);
      const created = await createUpload(b, bytes, {
        part_size: 5 * MiB,
        content_type: 'application/octet-stream',
      });
      const u = created.body.data;
      const [p1, p2] = slices(bytes, 5 * MiB);
      const [u1, u2] = created.body.part_urls;
      const r1 = await putPart(u1.url, p1!);
      const tags = [
        { number: 1, etag: r1.etag, sha256: sha256(p1!) },
        { number: 2, etag: '"00000000000000000000000000000000"', sha256: sha256(p2!) },
      ];
      const missing = await complete(b, u.id, tags);
      assert.equal(
        [missing.status, missing.body.error.details[0].reason],
        [422, 'part_not_uploaded'],
      );
      const short = await putPart(u2.url, p2!.subarray(0, 5));
      assert.is(short.status, 200);
      const cut = await complete(b, u.id, tags);
      assert.equal([cut.status, cut.body.error.details[0].reason], [422, 'part_size_mismatch']);
      const r2 = await putPart(u2.url, p2!);
      const wrongTag = await complete(b, u.id, tags);
      assert.equal(
        [wrongTag.status, wrongTag.body.error.details[0].reason],
        [422, 'part_etag_mismatch'],
      );
      assert.is((await b.api('GET', `/api/v3/uploads/${u.id}`)).body.data.status, 'pending');
      const listOrder = await complete(b, u.id, [tags[0]]);
      assert.equal([listOrder.status, listOrder.body.error.details[0].reason], [422, 'part_list']);
      tags[1]!.etag = r2.etag!;
      const done = await complete(b, u.id, tags);
      assert.is(done.status, 200, done.text);
    },
  );

  t(
    'cancel deletes the parts; a canceled upload takes no part and cannot complete',
    async ({ b }) => {
      const bytes = Buffer.from('to be canceled');
      const { upload, tags, created } = await uploadParts(b, bytes);
      const res = await b.api('PATCH', `/api/v3/uploads/${upload.id}`, {
        body: { status: 'canceled' },
      });
      assert.equal([res.status, res.body.data.status], [200, 'canceled']);
      assert.equal((await b.api('GET', `/api/v3/uploads/${upload.id}/parts`)).body.data, []);
      assert.equal(await storedParts(b, upload.id), []);
      if (b.backend === 'local') {
        // S3 answers 404 NoSuchUpload here; s3rver accepts the part (it never checks the upload).
        const put = await putPart(created.body.part_urls[0].url, bytes);
        assert.is(put.status, 404);
      }
      const done = await complete(b, upload.id, tags);
      assert.equal([done.status, done.body.error.code], [422, 'invalid_transition']);
      const again = await b.api('PATCH', `/api/v3/uploads/${upload.id}`, {
        body: { status: 'canceled' },
      });
      assert.equal([again.status, again.body.data.status], [200, 'canceled']);
      const { upload: finished, tags: t2 } = await uploadParts(b, bytes);
      await complete(b, finished.id, t2);
      const late = await b.api('PATCH', `/api/v3/uploads/${finished.id}`, {
        body: { status: 'canceled' },
      });
      assert.equal([late.status, late.body.error.code], [422, 'invalid_transition']);
    },
  );

  t('an unfinished upload expires after 24 hours; the sweep deletes its parts', async ({ b }) => {
    const bytes = Buffer.from('left behind');
    const { upload } = await uploadParts(b, bytes);
    assert.is((await storedParts(b, upload.id)).length, 1);
    b.clock.advance(24 * 3600_000 - 60_000);
    assert.is(await b.app.services.uploads.sweepExpired(), 0);
    assert.is((await b.api('GET', `/api/v3/uploads/${upload.id}`)).body.data.status, 'pending');
    b.clock.advance(60_000);
    assert.is((await b.api('GET', `/api/v3/uploads/${upload.id}`)).body.data.status, 'expired');
    assert.ok((await b.app.services.uploads.sweepExpired()) >= 1);
    assert.equal(await storedParts(b, upload.id), []);
    const row = await b.app.services.uploads.get(b.accountId, Number(upload.id));
    assert.is(row.status, 'expired');
  });

  t(
    'permissions and accounts: files.read reads, files.write writes; another account sees 404',
    async ({ b }) => {
      const reader = await credentialWith(b, ['files.read']);
      const bytes = Buffer.from('x');
      const denied = await createUpload(b, bytes, {}, reader.secret);
      assert.equal([denied.status, denied.body.error.code], [403, 'permission_denied']);
      const { upload, tags } = await uploadParts(b, bytes);
      const fileId = (await complete(b, upload.id, tags)).body.data.file_id;
      assert.is(
        (await b.api('GET', `/api/v3/files/${fileId}`, { secret: reader.secret })).status,
        200,
      );
      const other = await b.app.services.accounts.createAccount({ name: 'Other school' });
      const stranger = await b.app.services.accounts.createRootCredential({
        accountId: other.id,
        permissions: ['*'],
      });
      for (const p of [`/api/v3/files/${fileId}`, `/api/v3/uploads/${upload.id}`]) {
        assert.is((await b.api('GET', p, { secret: stranger.secret })).status, 404);
      }
      const link = await b.api('POST', `/api/v3/files/${fileId}/download-links`, {
        key: newKey(),
        secret: stranger.secret,
      });
      assert.is(link.status, 404);
      assert.is((await b.api('GET', '/api/v3/files/99999999')).status, 404);
    },
  );

  t(
    'a store that fails answers 503 storage_unavailable; nothing committed is lost',
    async ({ b }) => {
      const bytes = Buffer.from('survives an outage');
      const { upload, tags } = await uploadParts(b, bytes);
      const kept = await uploadParts(b, bytes);
      const keptFile = (await complete(b, kept.upload.id, kept.tags)).body.data.file_id;
      const { breakStore, mendStore } = outage(b);
      await breakStore();
      try {
        const created = await createUpload(b, bytes);
        assert.equal([created.status, created.body.error.code], [503, 'storage_unavailable']);
        const done = await complete(b, upload.id, tags);
        assert.equal([done.status, done.body.error.code], [503, 'storage_unavailable']);
        assert.is((await b.api('GET', `/api/v3/uploads/${upload.id}`)).body.data.status, 'pending');
      } finally {
        await mendStore();
      }
      const done = await complete(b, upload.id, tags);
      assert.equal([done.status, done.body.data.status], [200, 'completed']);
      const got = await download(b, keptFile);
      assert.ok(got.bytes.equals(bytes));
    },
  );

  t(
    'a join whose answer is lost (the store joined, the call timed out): 503, pending; a retry finds the joined object, checks it and completes',
    async ({ b }) => {
      const bytes = crypto.randomBytes(5 * MiB + 10);
      const { upload, tags } = await uploadParts(b, bytes, {
        part_size: 5 * MiB,
        content_type: 'application/octet-stream',
      });
      const before = await fileCount(b);
      injectJoinTimeout(b);
      const first = await complete(b, upload.id, tags);
      assert.equal(
        [first.status, first.body.error?.code],
        [503, 'storage_unavailable'],
        first.text,
      );
      const held = (await b.api('GET', `/api/v3/uploads/${upload.id}`)).body.data;
      assert.equal([held.status, held.file_id], ['pending', null]);
      // Joined: the store holds no parts any more (a retry answered part_not_uploaded).
      assert.equal(await storedParts(b, upload.id), []);
      const retry = await complete(b, upload.id, tags);
      assert.equal([retry.status, retry.body.data?.status], [200, 'completed'], retry.text);
      assert.is(await fileCount(b), before + 1);
      const got = await download(b, retry.body.data.file_id);
      assert.is(sha256(got.bytes), sha256(bytes));
    },
  );

  t(
    'a completing claim whose process died is retaken after the lease (10 minutes), joined or not',
    async ({ b }) => {
      const bytes = Buffer.from('claimed by a process that died\n');
      const before = await fileCount(b);
      // One died after its claim, before the join; the other after the join, before recording it.
      const notJoined = await uploadParts(b, bytes);
      const joined = await uploadParts(b, bytes);
      const row = async (id: string) =>
        b.app
          .db('uploads')
          .where({ id: Number(id) })
          .first();
      const j = await row(joined.upload.id);
      await b.app.services.files.storage.completeMultipart(
        j.storage_key,
        j.storage_upload_id,
        joined.tags,
      );
      for (const { upload } of [notJoined, joined])
        await b.app
          .db('uploads')
          .where({ id: Number(upload.id) })
          .update({ status: 'completing', updated_at: b.clock.now().toISOString() });
      b.clock.advance(COMPLETING_LEASE_MS - 1000);
      for (const { upload, tags } of [notJoined, joined]) {
        const early = await complete(b, upload.id, tags);
        assert.equal(
          [early.status, early.body.error?.code],
          [422, 'invalid_transition'],
          early.text,
        );
      }
      b.clock.advance(1000);
      for (const { upload, tags } of [notJoined, joined]) {
        const retaken = await complete(b, upload.id, tags);
        assert.equal([retaken.status, retaken.body.data?.status], [200, 'completed'], retaken.text);
        const got = await download(b, retaken.body.data.file_id);
        assert.ok(got.bytes.equals(bytes));
      }
      assert.is(await fileCount(b), before + 2);
    },
  );

  t(
    'a read-back that breaks after the parts were joined: 503, still completing; a retry checks the joined object and completes',
    async ({ b }) => {
      const bytes = crypto.randomBytes(5 * MiB + 10);
      const { upload, tags } = await uploadParts(b, bytes, {
        part_size: 5 * MiB,
        content_type: 'application/octet-stream',
      });
      const before = await fileCount(b);
      injectReadFault(b, 'stream');
      const first = await complete(b, upload.id, tags);
      assert.equal(
        [first.status, first.body.error?.code],
        [503, 'storage_unavailable'],
        first.text,
      );
      const held = (await b.api('GET', `/api/v3/uploads/${upload.id}`)).body.data;
      assert.equal([held.status, held.file_id], ['completing', null]);
      // Joined: the store holds no parts any more, so only the joined object can finish it.
      assert.equal(await storedParts(b, upload.id), []);
      assert.is(await fileCount(b), before);
      const retry = await complete(b, upload.id, tags);
      assert.equal([retry.status, retry.body.data?.status], [200, 'completed'], retry.text);
      assert.is(await fileCount(b), before + 1);
      const got = await download(b, retry.body.data.file_id);
      assert.is(sha256(got.bytes), sha256(bytes));
      const again = await complete(b, upload.id, tags);
      assert.equal([again.status, again.body.data.file_id], [200, retry.body.data.file_id]);
    },
  );

  t(
    'a read-back that fails after the parts were joined, then a retry finds a mismatch: 422 and the upload fails',
    async ({ b }) => {
      const bytes = Buffer.from('declared with another checksum\n');
      const { upload, tags } = await uploadParts(b, bytes, { sha256: sha256(Buffer.from('x')) });
      const before = await fileCount(b);
      injectReadFault(b, 'open');
      const first = await complete(b, upload.id, tags);
      assert.equal(
        [first.status, first.body.error?.code],
        [503, 'storage_unavailable'],
        first.text,
      );
      assert.is(
        (await b.api('GET', `/api/v3/uploads/${upload.id}`)).body.data.status,
        'completing',
      );
      const retry = await complete(b, upload.id, tags);
      assert.equal(
        [retry.status, retry.body.error?.code, retry.body.error?.details[0].reason],
        [422, 'upload_integrity_mismatch', 'sha256_mismatch'],
      );
      const after = (await b.api('GET', `/api/v3/uploads/${upload.id}`)).body.data;
      assert.equal(
        [after.status, after.file_id, after.failure_reason],
        ['failed', null, 'sha256_mismatch'],
      );
      assert.is(await fileCount(b), before);
      // The joined bytes of a failed upload are deleted.
      const row = await b.app
        .db('uploads')
        .where({ id: Number(upload.id) })
        .first();
      const gone = await b.app.services.files.storage.read(row.storage_key).then(
        (s) => (s.destroy(), false),
        () => true,
      );
      assert.ok(gone, 'the joined object was deleted');
    },
  );

  if (backend === 'local') {
    t(
      'signed URLs: a changed signature or path is refused, and they expire after an hour',
      async ({ b }) => {
        const bytes = Buffer.from('signed');
        const created = await createUpload(b, bytes);
        const url = new URL(created.body.part_urls[0].url);
        const forged = new URL(url);
        forged.searchParams.set('signature', '0'.repeat(64));
        assert.is((await putPart(forged.toString(), bytes)).status, 403);
        const otherPart = url.toString().replace('/parts/1?', '/parts/2?');
        assert.is((await putPart(otherPart, bytes)).status, 403);
        const { upload, tags } = await uploadParts(b, bytes);
        const fileId = (await complete(b, upload.id, tags)).body.data.file_id;
        const link = await b.api('POST', `/api/v3/files/${fileId}/download-links`, {
          key: newKey(),
        });
        const linkUrl = link.body.data.url as string;
        assert.is((await fetch(linkUrl.replace(`/files/${fileId}?`, '/files/1?'))).status, 403);
        b.clock.advance(3600_000);
        assert.is((await fetch(linkUrl)).status, 403);
        assert.is((await putPart(url.toString(), bytes)).status, 403);
        const fresh = await b.api('POST', `/api/v3/files/${fileId}/download-links`, {
          key: newKey(),
        });
        assert.is((await fetch(fresh.body.data.url)).status, 200);
      },
    );

    t('a part longer than its place in the layout is refused while it streams', async ({ b }) => {
      const bytes = Buffer.from('exactly this');
      const created = await createUpload(b, bytes);
      const r = await putPart(created.body.part_urls[0].url, Buffer.concat([bytes, bytes]));
      assert.is(r.status, 422);
      assert.is(JSON.parse(r.text).error.details[0].reason, 'part_too_large');
    });
  }

  // Last: it starts the workers (their sweeps would otherwise run beside the tests above).
  t(
    "a sandbox reset deletes the account's files, uploads, imports and exports; a job deletes the bytes",
    async ({ b }) => {
      const { id } = await b.app.services.accounts.createAccount({ name: 'Files', sandbox: true });
      const { secret } = await b.app.services.accounts.createRootCredential({
        accountId: id,
        permissions: ['*'],
      });
      const as = { secret };
      const csv = Buffer.from('email,product_external_id,status\nana@example.com,X,active\n');
      const made = await createUpload(
        b,
        csv,
        { purpose: 'import', content_type: 'text/csv' },
        secret,
      );
      assert.is(made.status, 201, made.text);
      const put = await putPart(made.body.part_urls[0].url, csv);
      const done = await b.api('POST', `/api/v3/uploads/${made.body.data.id}/completions`, {
        ...as,
        key: newKey(),
        body: { parts: [{ number: 1, etag: put.etag, sha256: sha256(csv) }] },
      });
      const fileId = done.body.data.file_id;
      const imp = await b.api('POST', '/api/v3/imports', {
        ...as,
        key: newKey(),
        body: { file_id: fileId, type: 'students_access' },
      });
      assert.is(imp.status, 201, imp.text);
      const open = await createUpload(b, Buffer.from('unfinished'), {}, secret);
      const { storage_key } = await b.app
        .db('files')
        .where({ id: Number(fileId) })
        .first();
      await b.app.startWorkers();

      const reset = await b.api('POST', '/api/v3/sandbox/resets', { ...as, key: newKey() });
      assert.is(reset.status, 202, reset.text);
      const op = await waitFor(b, reset.body.data.id, undefined, secret);
      assert.is(op.status, 'succeeded');
      const [item] = await allItems(b, op.id, secret);
      assert.equal(
        [item.result.files, item.result.uploads, item.result.imports, item.result.exports],
        [1, 1, 1, 0],
      );
      assert.is((await b.api('GET', `/api/v3/files/${fileId}`, as)).status, 404);
      assert.is((await b.api('GET', `/api/v3/imports/${imp.body.data.id}`, as)).status, 404);
      const ended = await b.api('GET', `/api/v3/uploads/${open.body.data.id}`, as);
      assert.is(ended.body.data.status, 'expired');
      // The bytes go in the files.purge job the reset enqueued.
      let gone = false;
      for (const deadline = Date.now() + 15_000; !gone && Date.now() < deadline;) {
        gone = await b.app.services.files.storage.read(storage_key).then(
          (s) => (s.destroy(), false),
          () => true,
        );
        if (!gone) await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(gone, 'the stored bytes were deleted');
    },
  );

  return t;
}

/**
 * Makes the store's next read of an object fail, once: `open` refuses it as a store that is down
 * does; `stream` serves the first chunk and then breaks, as a connection reset mid-response does.
 */
/** The next join happens in the store, and then its call fails as a timed-out one does. */
function injectJoinTimeout(b: FilesBoot) {
  const storage = b.app.services.files.storage;
  const join = storage.completeMultipart;
  storage.completeMultipart = async (key, id, parts) => {
    storage.completeMultipart = join;
    await join.call(storage, key, id, parts);
    throw storageError(
      Object.assign(new Error('socket timed out (injected)'), { code: 'ETIMEDOUT' }),
    );
  };
}

function injectReadFault(b: FilesBoot, mode: 'open' | 'stream') {
  const storage = b.app.services.files.storage;
  const read = storage.read;
  storage.read = async (key, range) => {
    storage.read = read;
    const reset = Object.assign(new Error('read ECONNRESET (injected)'), { code: 'ECONNRESET' });
    if (mode === 'open') throw storageError(reset);
    const body = await read.call(storage, key, range);
    async function* breaking() {
      for await (const chunk of body) {
        yield chunk as Buffer;
        break;
      }
      body.destroy();
      throw reset;
    }
    return Readable.from(breaking());
  };
}

/** Makes the store fail and mends it: s3rver stops and starts; FILES_DIR becomes a plain file. */
function outage(b: FilesBoot) {
  const aside = `${b.filesDir}.aside`;
  return {
    async breakStore() {
      if (b.s3) return b.s3.stop();
      fs.renameSync(b.filesDir, aside);
      fs.writeFileSync(b.filesDir, 'not a folder');
    },
    async mendStore() {
      if (b.s3) return b.s3.start();
      fs.rmSync(b.filesDir);
      fs.renameSync(aside, b.filesDir);
    },
  };
}

async function fileCount(b: FilesBoot): Promise<number> {
  const r = await b.app.db('files').count({ n: '*' }).first();
  return Number(r!.n);
}

/** What the store still holds of an upload's parts. */
async function storedParts(b: FilesBoot, id: string) {
  const row = await b.app
    .db('uploads')
    .where({ id: Number(id) })
    .first();
  return b.app.services.files.storage.listParts(row.storage_key, row.storage_upload_id);
}
