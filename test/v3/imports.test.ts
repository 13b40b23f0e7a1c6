// Imports of students' access: create (pending, nothing read), PATCH / DELETE, the analysis (a
// 202 operation that streams the CSV and classifies every row), the per-row report, processing
// attempts (each row applied once, a second attempt takes only what is left), feature_disabled.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newKey, type Booted } from '../helpers/app.ts';
import { bootFiles } from '../helpers/files.ts';
import { all } from '../helpers/catalog.ts';
import { D } from '../helpers/sales.ts';
import { allItems } from '../helpers/operations.ts';
import {
  analyse,
  catalog,
  createImport,
  I,
  processImport,
  storedFile,
} from '../helpers/imports.ts';
import { setFeatures } from '../../src/domain/accounts/features.ts';

const t = suite<{ b: Booted }>('v3 imports');
t.before(async (ctx) => {
  ctx.b = await bootFiles('local');
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

const CSV = [
  'E-mail,Produto,Situacao',
  'ana@example.com,EXT-1,active', // 1 ready
  'not-an-email,EXT-1,active', // 2 email_invalid
  ',EXT-1,active', // 3 email_missing
  'bia@example.com,NOPE,active', // 4 product_unknown
  'caio@example.com,EXT-1,paused', // 5 status_invalid
  'ANA@example.com,EXT-1,', // 6 duplicate of 1
  'dora@example.com,EXT-1,', // 7 ready
  '"edu@example.com",EXT-1,Active', // 8 ready (quoted, any case)
].join('\n');
const MAPPING = { email: 'E-mail', product_external_id: 'Produto', status: 'Situacao' };

async function enrollmentsOf(b: Booted, email: string) {
  const users = await b.api('GET', `/api/v3/users?email=${encodeURIComponent(email)}`);
  if (users.body.data.length === 0) return null;
  return all(b, `/api/v3/users/${users.body.data[0].id}/enrollments`);
}

t(
  'POST /imports: pending, no row read; GET; PATCH with If-Match; DELETE to the trash',
  async ({ b }) => {
    await catalog(b, 'EXT-P');
    const imp = await createImport(b, CSV);
    assert.is(imp.status, 'pending');
    assert.equal(imp.rows, { total: 0, ready: 0, not_ready: 0, ignored: 0 });
    assert.equal(imp.mapping, {
      email: 'email',
      product_external_id: 'product_external_id',
      status: 'status',
    });
    assert.is(imp.duplicate_policy, 'skip');
    assert.is(imp.current_operation_id, null);
    assert.is((await b.app.db('import_rows').where({ import_id: Number(imp.id) })).length, 0);

    const got = await b.api('GET', `${I}/${imp.id}`);
    assert.is(got.status, 200);
    assert.is(got.headers.get('etag'), `"${imp.revision}"`);

    const stale = await b.api('PATCH', `${I}/${imp.id}`, {
      body: { mapping: { email: 'E-mail' } },
      headers: { 'if-match': '"nope"' },
    });
    assert.is(stale.status, 412);
    const patched = await b.api('PATCH', `${I}/${imp.id}`, {
      body: { mapping: { email: 'E-mail' }, duplicate_policy: 'keep_last' },
      headers: { 'if-match': `"${imp.revision}"` },
    });
    assert.is(patched.status, 200);
    assert.equal(patched.body.data.mapping, { ...imp.mapping, email: 'E-mail' });
    assert.is(patched.body.data.duplicate_policy, 'keep_last');
    assert.is.not(patched.body.data.revision, imp.revision);

    assert.is((await b.api('DELETE', `${I}/${imp.id}`)).status, 204);
    const deleted = await b.api('GET', `${I}/${imp.id}`);
    assert.is(deleted.body.data.deleted, true);
    assert.is((await b.api('DELETE', `${I}/${imp.id}`)).status, 204, 'again: nothing changes');
    const refused = await b.api('POST', `${I}/${imp.id}/analyses`, { key: newKey() });
    assert.is(refused.status, 409);
    assert.is(refused.body.error.code, 'state_conflict');
  },
);

t('POST /imports: file_id must be a file of purpose import of this account', async ({ b }) => {
  const exportFile = await storedFile(b, 'id\n1\n', 'export');
  for (const file_id of [exportFile, '999999']) {
    const res = await b.api('POST', I, {
      body: { file_id, type: 'students_access' },
      key: newKey(),
    });
    assert.is(res.status, 422, file_id);
    assert.is(res.body.error.details[0].field, 'file_id');
  }
});

t('a processing attempt before the analysis finished is 409 state_conflict', async ({ b }) => {
  const imp = await createImport(b, CSV, { mapping: MAPPING });
  const res = await b.api('POST', `${I}/${imp.id}/processing-attempts`, { key: newKey() });
  assert.is(res.status, 409);
  assert.is(res.body.error.code, 'state_conflict');
  assert.is(res.body.error.details[0].reason, 'analysis_required');
});

t(
  'analysis: counters, the per-row report (paged, by status), then processing applies each ready row once',
  async ({ b }) => {
    const { product: p } = await catalog(b, 'EXT-1');
    const imp = await createImport(b, CSV, { mapping: MAPPING });
    const op = await analyse(b, imp.id);
    assert.is(op.type, 'import.analysis');
    assert.is(op.status, 'succeeded');
    const analysed = (await b.api('GET', `${I}/${imp.id}`)).body.data;
    assert.is(analysed.status, 'analyzed');
    assert.is(analysed.current_operation_id, op.id);
    assert.equal(analysed.rows, { total: 8, ready: 3, not_ready: 4, ignored: 1 });

    const notReady = await all(b, `${I}/${imp.id}/rows?status=not_ready`);
    assert.equal(
      notReady.map((r) => [r.row, r.reason]),
      [
        [2, 'email_invalid'],
        [3, 'email_missing'],
        [4, 'product_unknown'],
        [5, 'status_invalid'],
      ],
    );
    const first = await b.api('GET', `${I}/${imp.id}/rows?limit=3`);
    assert.equal(
      first.body.data.map((r: any) => r.row),
      [1, 2, 3],
    );
    const next = await b.api(
      'GET',
      `${I}/${imp.id}/rows?limit=3&cursor=${encodeURIComponent(first.body.page.next_cursor)}`,
    );
    assert.equal(
      next.body.data.map((r: any) => r.row),
      [4, 5, 6],
    );
    assert.equal([next.body.data[2].status, next.body.data[2].reason], ['ignored', 'duplicate']);

    const [attempt, processed] = await processImport(b, imp.id);
    assert.equal(attempt.selection, { mode: 'initial', rows: 3 });
    assert.equal(attempt.requested_by, { id: String(b.credentialId), kind: 'credential' });
    assert.is(attempt.import_id, imp.id);
    assert.is(processed.type, 'import.process');
    assert.is(processed.status, 'succeeded');
    assert.equal(processed.progress, { total: 3, done: 3, failed: 0 });
    assert.equal(
      (await allItems(b, processed.id)).map((i) => i.key),
      ['1', '7', '8'],
    );
    for (const email of ['ana@example.com', 'dora@example.com', 'edu@example.com']) {
      const enrollments = await enrollmentsOf(b, email);
      assert.is(enrollments?.length, 1, email);
      assert.is(enrollments![0].product_id, p.id);
    }
    assert.is(await enrollmentsOf(b, 'bia@example.com'), null, 'not-ready rows apply nothing');
    const done = (await b.api('GET', `${I}/${imp.id}`)).body.data;
    assert.is(done.status, 'processed');
    const listed = await b.api('GET', `${I}/${imp.id}/processing-attempts`);
    assert.is(listed.body.data.length, 1);
    assert.equal(listed.body.data[0].effects, { rows_applied: 3, rows_failed: 0 });
    assert.is(listed.body.data[0].status, 'succeeded');

    const again = await b.api('POST', `${I}/${imp.id}/processing-attempts`, { key: newKey() });
    assert.is(again.status, 409);
    assert.is(again.body.error.details[0].reason, 'nothing_to_process');
    const patch = await b.api('PATCH', `${I}/${imp.id}`, {
      body: { duplicate_policy: 'keep_last' },
    });
    assert.is(patch.status, 409, 'processed rows: the mapping is settled');
  },
);

t('a second attempt processes only the rows not yet applied', async ({ b }) => {
  await catalog(b, 'EXT-A');
  const { delivery: dB } = await catalog(b, 'EXT-B');
  const csv =
    'email,product_external_id,status\nf1@example.com,EXT-A,active\nf2@example.com,EXT-B,active\nf3@example.com,EXT-A,active\n';
  const imp = await createImport(b, csv);
  await analyse(b, imp.id);
  // EXT-B stops listening between the analysis and the processing: its row fails.
  const archive = await b.api('PATCH', `${D}/${dB.id}`, { body: { status: 'archived' } });
  assert.is(archive.status, 200);
  const [, first] = await processImport(b, imp.id);
  assert.is(first.status, 'partially_succeeded');
  assert.equal(first.progress, { total: 3, done: 2, failed: 1 });
  const f1 = (await enrollmentsOf(b, 'f1@example.com'))![0];
  assert.is((await b.api('GET', `${I}/${imp.id}`)).body.data.status, 'analyzed');

  assert.is((await b.api('PATCH', `${D}/${dB.id}`, { body: { status: 'active' } })).status, 200);
  const [attempt, second] = await processImport(b, imp.id);
  assert.equal(attempt.selection, { mode: 'remaining', rows: 1 });
  assert.equal(second.progress, { total: 1, done: 1, failed: 0 });
  assert.equal(
    (await allItems(b, second.id)).map((i) => i.key),
    ['2'],
  );
  assert.is((await enrollmentsOf(b, 'f2@example.com'))!.length, 1);
  // f1 was not granted again (a renewal would have moved its end by 30 days).
  const f1After = (await enrollmentsOf(b, 'f1@example.com'))!;
  assert.is(f1After.length, 1);
  assert.is(f1After[0].ends_at, f1.ends_at);
  assert.is(f1After[0].revision, f1.revision);
  const imported = (await b.api('GET', `${I}/${imp.id}`)).body.data;
  assert.is(imported.status, 'processed');
  const attempts = (await b.api('GET', `${I}/${imp.id}/processing-attempts`)).body.data;
  assert.equal(
    attempts.map((a: any) => [a.selection.mode, a.effects.rows_applied, a.effects.rows_failed]),
    [
      ['initial', 2, 1],
      ['remaining', 1, 0],
    ],
  );
});

t('status inactive ends the access the delivery granted', async ({ b }) => {
  await catalog(b, 'EXT-I');
  const grant = await createImport(
    b,
    'email,product_external_id,status\ngil@example.com,EXT-I,active\n',
  );
  await analyse(b, grant.id);
  await processImport(b, grant.id);
  assert.is((await enrollmentsOf(b, 'gil@example.com'))![0].ended, false);
  const end = await createImport(
    b,
    'email,product_external_id,status\ngil@example.com,EXT-I,inactive\n',
  );
  await analyse(b, end.id);
  const [, op] = await processImport(b, end.id);
  assert.is(op.status, 'succeeded');
  assert.is((await enrollmentsOf(b, 'gil@example.com'))![0].ended, true);
});

t('a file without a mapped column fails the analysis; the import says why', async ({ b }) => {
  const imp = await createImport(b, 'mail,product\nx@example.com,EXT-1\n');
  const op = await analyse(b, imp.id);
  assert.is(op.status, 'failed');
  const failed = (await b.api('GET', `${I}/${imp.id}`)).body.data;
  assert.is(failed.status, 'failed');
  assert.match(failed.failure_reason, /no column "email"/);
  // A new mapping sends it back to pending, and the analysis passes.
  await catalog(b, 'EXT-M');
  const patched = await b.api('PATCH', `${I}/${imp.id}`, {
    body: { mapping: { email: 'mail', product_external_id: 'product', status: 'product' } },
  });
  assert.is(patched.body.data.status, 'pending');
  assert.is(patched.body.data.failure_reason, null);
});

t('a NUL in a cell: the analysis stores U+FFFD (PostgreSQL text refuses NUL)', async ({ b }) => {
  await catalog(b, 'EXT-Z');
  const csv =
    'email,product_external_id,status\nzoe\u0000@example.com,EXT-Z,active\nyan@example.com,EXT\u0000Z,active\nxia@example.com,EXT-Z,active\n';
  const imp = await createImport(b, csv);
  const op = await analyse(b, imp.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op.error));
  const rows = (await b.api('GET', `${I}/${imp.id}/rows`)).body.data;
  assert.equal(
    rows.map((r: any) => [r.email, r.product_external_id, r.status]),
    [
      ['zoe\uFFFD@example.com', 'EXT-Z', 'ready'],
      ['yan@example.com', 'EXT\uFFFDZ', 'not_ready'],
      ['xia@example.com', 'EXT-Z', 'ready'],
    ],
  );
});

t('imports off for the account: 409 feature_disabled', async ({ b }) => {
  const imp = await createImport(b, CSV, { mapping: MAPPING });
  await setFeatures({ tx: b.app.db }, b.accountId, { imports: false });
  try {
    const fileId = await storedFile(b, CSV);
    const created = await b.api('POST', I, {
      body: { file_id: fileId, type: 'students_access' },
      key: newKey(),
    });
    assert.is(created.status, 409);
    assert.is(created.body.error.code, 'feature_disabled');
    const analysis = await b.api('POST', `${I}/${imp.id}/analyses`, { key: newKey() });
    assert.is(analysis.body.error.code, 'feature_disabled');
    assert.is((await b.api('GET', `${I}/${imp.id}`)).status, 200, 'reading stays allowed');
  } finally {
    await setFeatures({ tx: b.app.db }, b.accountId, { imports: true });
  }
  assert.is((await b.api('POST', `${I}/${imp.id}/analyses`, { key: newKey() })).status, 202);
});

t.run();
