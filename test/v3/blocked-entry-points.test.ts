// The entry points no credential authenticates (gateway postbacks, signed part and download URLs)
// act for an account too: blocked or removed, they answer 403 instance_blocked as /api/v3 does
// (instance_unavailable when otherwise not active), and nothing is recorded or served.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { bootFiles, type FilesBoot } from '../helpers/files.ts';
import { complete, createUpload, putPart, uploadParts } from '../helpers/files-suite.ts';
import { newKey } from '../helpers/app.ts';
import { delivery, postback, rows, sale } from '../helpers/sales.ts';
import { product } from '../helpers/catalog.ts';

const t = suite<{ b: FilesBoot }>('entry points without a credential: blocked accounts');
t.before(async (ctx) => {
  ctx.b = await bootFiles('local');
});
t.after(async (ctx) => ctx.b.close());

const setStatus = (b: FilesBoot, status: 'active' | 'blocked' | 'removed' | 'unavailable') =>
  b.app.services.accounts.setAccountStatus(b.accountId, status);

t('postbacks, part URLs and download links refuse a blocked account', async ({ b }) => {
  const p = await product(b, { name: 'Blocked course' });
  const d = await delivery(b, {
    name: 'Blocked sales',
    external_ids: ['ext-1'],
    products: [{ product_id: p.id }],
  });
  const bytes = Buffer.from('kept while blocked');
  const { upload, tags } = await uploadParts(b, bytes);
  const fileId = (await complete(b, upload.id, tags)).body.data.file_id;
  const link = await b.api('POST', `/api/v3/files/${fileId}/download-links`, { key: newKey() });
  const pending = await createUpload(b, bytes);
  assert.is(pending.status, 201, pending.text);
  const partUrl = pending.body.part_urls[0].url;

  for (const [status, code, http] of [
    ['blocked', 'instance_blocked', 403],
    ['removed', 'instance_blocked', 403],
    ['unavailable', 'instance_unavailable', 403],
  ] as const) {
    await setStatus(b, status);
    const sold = await postback(b, d, sale({ transaction_id: `T-${status}` }));
    assert.equal([sold.status, sold.body?.error?.code], [http, code], status);
    const put = await putPart(partUrl, bytes);
    assert.is(put.status, http, `${status}: ${put.text}`);
    assert.is(JSON.parse(put.text).error.code, code);
    const got = await fetch(link.body.data.url);
    assert.is(got.status, http, status);
    assert.is(((await got.json()) as any).error.code, code);
  }
  assert.equal(await rows(b, 'sales_transactions'), []);
  assert.equal(await rows(b, 'users'), []);

  // Active again: the same calls work, and the sale is recorded once.
  await setStatus(b, 'active');
  const sold = await postback(b, d, sale({ transaction_id: 'T-active' }));
  assert.equal([sold.status, sold.body.duplicate], [200, false]);
  assert.is((await rows(b, 'sales_transactions')).length, 1);
  assert.is((await putPart(partUrl, bytes)).status, 200);
  const got = await fetch(link.body.data.url);
  assert.equal([got.status, Buffer.from(await got.arrayBuffer()).equals(bytes)], [200, true]);
});

t.run();
