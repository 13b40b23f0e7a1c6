import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  bootFiles,
  chunks,
  readAll,
  rejectsWith,
  sha256,
  type FilesBoot,
} from '../helpers/files.ts';

const backend = (process.env.FILES_BACKEND as 'local' | 's3') || 'local';
const t = suite<{ b: FilesBoot }>(`files service (${backend})`);
t.before(async (ctx) => {
  ctx.b = await bootFiles(backend);
});
t.after(async (ctx) => ctx.b.close());

t(
  'createFromStream stores the bytes with their size and SHA-256; openRead streams them back',
  async ({ b }) => {
    const files = b.app.services.files;
    const body = 'email,status\na@example.com,active\n';
    const f = await files.createFromStream(
      b.accountId,
      { purpose: 'export', filename: 'users.csv', contentType: 'text/csv' },
      chunks('email,status\n', 'a@example.com,active\n'),
    );
    assert.equal(f, {
      id: f.id,
      accountId: b.accountId,
      purpose: 'export',
      filename: 'users.csv',
      contentType: 'text/csv',
      size: Buffer.byteLength(body),
      sha256: sha256(Buffer.from(body)),
      createdAt: f.createdAt,
    });
    assert.equal(await files.get(b.accountId, f.id), f);
    assert.is((await readAll(await files.openRead(b.accountId, f.id))).toString(), body);
  },
);

t('another account does not see the file (404); remove deletes it', async ({ b }) => {
  const files = b.app.services.files;
  const f = await files.createFromStream(
    b.accountId,
    { purpose: 'export', filename: 'x.csv', contentType: 'text/csv' },
    chunks('a\n'),
  );
  assert.is(await rejectsWith(files.get(b.accountId + 1000, f.id)), 'not_found');
  await files.remove(b.accountId, f.id);
  assert.is(await rejectsWith(files.get(b.accountId, f.id)), 'not_found');
  assert.is(await rejectsWith(files.openRead(b.accountId, f.id)), 'not_found');
  assert.is(await rejectsWith(files.remove(b.accountId, f.id)), 'not_found');
});

t.run();
