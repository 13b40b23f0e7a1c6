// Users exports: a 202 with the export and its operation; the CSV holds exactly the users as of
// `snapshot_at` (even while users change during generation), with the columns and filters asked
// for; `completed` with file_id, total and expires_at (+7 days), `failed` with a reason, and
// `expired` 7 days later with its bytes deleted.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DAY } from '../../src/clock.ts';
import { AppError } from '../../src/errors.ts';
import { newKey, type Booted } from '../helpers/app.ts';
import { bootFiles, rejectsWith } from '../helpers/files.ts';
import { student } from '../helpers/sales.ts';
import { waitFor } from '../helpers/operations.ts';
import { analyse, catalog, createImport, fileText, processImport } from '../helpers/imports.ts';

const t = suite<{ b: Booted; ids: string[] }>('v3 exports');
t.before(async (ctx) => {
  ctx.b = await bootFiles('local');
  await ctx.b.app.startWorkers();
  ctx.ids = [];
  for (const n of ['ana', 'bia', 'caio', 'dora', 'edu'])
    ctx.ids.push((await student(ctx.b, `${n}@example.com`, n.toUpperCase())).id);
});
t.after(async (ctx) => ctx.b.close());

async function exported(b: Booted, body: Record<string, unknown>) {
  const res = await b.api('POST', '/api/v3/exports', {
    body: { resource: 'users', ...body },
    key: newKey(),
  });
  assert.is(res.status, 202, JSON.stringify(res.body));
  assert.is(res.body.data.status, 'queued');
  assert.is(res.headers.get('location'), `/api/v3/operations/${res.body.data.operation_id}`);
  const op = await waitFor(b, res.body.data.operation_id);
  assert.is(op.type, 'export.users');
  return (await b.api('GET', `/api/v3/exports/${res.body.data.id}`)).body.data;
}

t(
  'completed: the file has the columns asked for, one line per user; expires 7 days later',
  async ({ b, ids }) => {
    const e = await exported(b, { columns: ['id', 'email', 'name'] });
    assert.is(e.status, 'completed');
    assert.is(e.total, 5);
    assert.equal(e.columns, ['id', 'email', 'name']);
    assert.ok(e.file_id);
    assert.is(e.failure_reason, null);
    assert.ok(e.consistency.snapshot_at >= e.created_at);
    assert.is(
      new Date(e.expires_at).getTime() - new Date(e.consistency.snapshot_at).getTime() >= 7 * DAY,
      true,
    );
    assert.ok(
      new Date(e.expires_at).getTime() - new Date(e.consistency.snapshot_at).getTime() <
        7 * DAY + 60_000,
    );
    const file = await b.app.services.files.get(b.accountId, Number(e.file_id));
    assert.is(file.purpose, 'export');
    assert.is(
      await fileText(b, e.file_id),
      'id,email,name\n' +
        ids
          .map(
            (id, i) =>
              `${id},${['ana', 'bia', 'caio', 'dora', 'edu'][i]}@example.com,${['ANA', 'BIA', 'CAIO', 'DORA', 'EDU'][i]}\n`,
          )
          .join(''),
    );
  },
);

t(
  'rows are as of snapshot_at although users change while the file is written',
  async ({ b, ids }) => {
    const exportsService = b.app.services.exports;
    exportsService.pageSize = 2;
    let changed = false;
    exportsService.afterPage = async (page) => {
      if (page !== 1 || changed) return;
      // Between the first page (ana, bia) and the rest: rename one, delete one, add one.
      assert.is(
        (await b.api('PATCH', `/api/v3/users/${ids[4]}`, { body: { name: 'Renamed' } })).status,
        200,
      );
      assert.is((await b.api('DELETE', `/api/v3/users/${ids[3]}`)).status, 204);
      await student(b, 'new@example.com', 'NEW');
      changed = true;
    };
    try {
      const e = await exported(b, { columns: ['email', 'name'] });
      assert.ok(changed, 'the users changed mid-generation');
      assert.is(e.total, 5);
      assert.is(
        await fileText(b, e.file_id),
        'email,name\nana@example.com,ANA\nbia@example.com,BIA\ncaio@example.com,CAIO\ndora@example.com,DORA\nedu@example.com,EDU\n',
      );
      // A new export sees the changes.
      const after = await exported(b, { columns: ['email', 'name'] });
      assert.is(
        await fileText(b, after.file_id),
        'email,name\nana@example.com,ANA\nbia@example.com,BIA\ncaio@example.com,CAIO\nedu@example.com,Renamed\nnew@example.com,NEW\n',
      );
    } finally {
      exportsService.pageSize = 1000;
      exportsService.afterPage = async () => undefined;
    }
  },
);

t(
  'filters: product_id, delivery_id, status, type, tag_id, access; showcase_id is 422',
  async ({ b }) => {
    const { product: p, delivery: d } = await catalog(b, 'EXT-X');
    const imp = await createImport(
      b,
      'email,product_external_id,status\nana@example.com,EXT-X,active\nbia@example.com,EXT-X,active\n',
    );
    await analyse(b, imp.id);
    await processImport(b, imp.id);
    const end = await createImport(
      b,
      'email,product_external_id,status\nbia@example.com,EXT-X,inactive\n',
    );
    await analyse(b, end.id);
    await processImport(b, end.id);
    const tag = (await b.api('POST', '/api/v3/tags', { body: { name: 'vip' }, key: newKey() })).body
      .data;
    const caio = (await b.api('GET', '/api/v3/users?email=caio@example.com')).body.data[0];
    assert.is((await b.api('PUT', `/api/v3/users/${caio.id}/tags/${tag.id}`)).status < 300, true);
    await b.app
      .db('users')
      .where({ id: Number(caio.id) })
      .update({ last_access_at: new Date().toISOString() });

    const emails = async (filters: Record<string, unknown>) =>
      (await fileText(b, (await exported(b, { columns: ['email'], filters })).file_id))
        .trim()
        .split('\n')
        .slice(1);
    assert.equal(await emails({ product_id: [p.id] }), ['ana@example.com', 'bia@example.com']);
    assert.equal(await emails({ delivery_id: d.id }), ['ana@example.com', 'bia@example.com']);
    assert.equal(await emails({ product_id: [p.id], status: 'active' }), ['ana@example.com']);
    assert.equal(await emails({ product_id: [p.id], status: 'inactive' }), ['bia@example.com']);
    assert.equal(await emails({ tag_id: [tag.id] }), ['caio@example.com']);
    assert.equal(await emails({ access: 'accessed' }), ['caio@example.com']);
    assert.equal(await emails({ type: 'free', tag_id: [tag.id] }), []);
    assert.equal(await emails({ type: 'paying', tag_id: [tag.id] }), ['caio@example.com']);
    const e = await exported(b, {
      columns: ['email'],
      filters: { tag_id: [tag.id], type: 'paying' },
    });
    assert.equal(e.filters, {
      access: null,
      delivery_id: null,
      showcase_id: null,
      status: null,
      type: 'paying',
      product_id: [],
      tag_id: [tag.id],
    });

    const showcase = await b.api('POST', '/api/v3/exports', {
      body: { resource: 'users', columns: ['id'], filters: { showcase_id: '1' } },
      key: newKey(),
    });
    assert.is(showcase.status, 422);
    assert.is(showcase.body.error.details[0].field, 'filters.showcase_id');
  },
);

t('failed: a store that fails leaves the export failed with a reason', async ({ b }) => {
  const files = b.app.services.files;
  const original = files.createFromStream;
  files.createFromStream = async () => {
    throw new AppError('storage_unavailable');
  };
  try {
    const e = await exported(b, { columns: ['id'] });
    assert.is(e.status, 'failed');
    assert.is(e.failure_reason, 'storage_unavailable');
    assert.is(e.file_id, null);
  } finally {
    files.createFromStream = original;
  }
});

t('7 days after completion: expired, file_id null, bytes deleted by the sweep', async ({ b }) => {
  const e = await exported(b, { columns: ['id'] });
  assert.is(e.status, 'completed');
  b.clock.advance(7 * DAY - 60_000);
  assert.is((await b.api('GET', `/api/v3/exports/${e.id}`)).body.data.status, 'completed');
  assert.is(await b.app.services.exports.expireDue(), 0);
  b.clock.advance(2 * 60_000);
  const expired = (await b.api('GET', `/api/v3/exports/${e.id}`)).body.data;
  assert.is(expired.status, 'expired');
  assert.is(expired.file_id, null);
  // This one and those of the earlier tests, all completed more than 7 days ago now.
  assert.ok((await b.app.services.exports.expireDue()) >= 1);
  const row = await b.app
    .db('exports')
    .where({ id: Number(e.id) })
    .first();
  assert.equal([row.status, row.file_id], ['expired', null]);
  assert.is(
    await rejectsWith(b.app.services.files.openRead(b.accountId, Number(e.file_id))),
    'not_found',
  );
  const key = (
    await b.app
      .db('files')
      .where({ id: Number(e.file_id) })
      .first()
  ).storage_key;
  assert.is.not(await rejectsWith(fileTextOf(b, key)), 'resolved', 'the bytes are gone');
});

async function fileTextOf(b: Booted, key: string) {
  const stream = await b.app.services.files.storage.read(key);
  for await (const _ of stream) void _;
}

t('GET /exports/{id} of another account or unknown is 404', async ({ b }) => {
  assert.is((await b.api('GET', '/api/v3/exports/999999')).status, 404);
});

t.run();
