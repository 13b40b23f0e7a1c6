// Asynchronous operations through HTTP: batches from POST to a final status, their items and
// attempts, every rejection of the specification, cancellation, resumption, the backlog limit,
// tenancy and the 30-day sweep.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DAY } from '../../src/clock.ts';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { allItems, submit, testType, waitFor } from '../helpers/operations.ts';

const t = suite<{ b: Booted }>('v3 operations');
t.before(async (ctx) => {
  ctx.b = await boot();
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

t('users.upsert: 202 + Location, then succeeded with every item applied', async ({ b }) => {
  const existing = await b.api('POST', '/api/v3/users', {
    body: { name: 'Old Name', email: 'Ana@Example.com' },
    key: newKey(),
  });
  const res = await submit(b, 'users.upsert', [
    { key: 'a', payload: { email: 'ana@example.COM', name: 'Ana Souza' } },
    { key: 'b', payload: { email: 'bia@example.com', name: 'Bia', job_title: 'Teacher' } },
    { key: 'c', payload: { email: 'caio@example.com', name: 'Caio' } },
  ]);
  assert.is(res.status, 202);
  const op = res.body.data;
  assert.is(res.headers.get('location'), `/api/v3/operations/${op.id}`);
  assert.is(op.object, 'operation');
  assert.is(op.type, 'users.upsert');
  assert.equal(op.progress, { total: 3, done: 0, failed: 0 });
  assert.equal(op.attempt, { number: 1, status: 'queued' });
  assert.is(op.items_url, `/api/v3/operations/${op.id}/items`);
  assert.is(op.cancellation_requested, false);
  assert.is(Date.parse(op.expires_at) - Date.parse(op.created_at), 30 * DAY);

  const done = await waitFor(b, op.id);
  assert.is(done.status, 'succeeded');
  assert.equal(done.progress, { total: 3, done: 3, failed: 0 });
  assert.equal(done.attempt, { number: 1, status: 'succeeded' });
  assert.is(done.error, null);
  assert.ok(done.started_at && done.finished_at);

  const items = await allItems(b, op.id);
  assert.equal(
    items.map((i) => [i.key, i.index, i.status, i.result.created, i.attempt]),
    [
      ['a', 0, 'succeeded', false, 1],
      ['b', 1, 'succeeded', true, 1],
      ['c', 2, 'succeeded', true, 1],
    ],
  );
  assert.is(items[0].result.user_id, existing.body.data.id);
  const ana = await b.api('GET', `/api/v3/users/${existing.body.data.id}`);
  assert.is(ana.body.data.name, 'Ana Souza');
  const bia = await b.api('GET', `/api/v3/users/${items[1].result.user_id}`);
  assert.is(bia.body.data.job_title, 'Teacher');

  const attempts = await b.api('GET', `/api/v3/operations/${op.id}/attempts`);
  assert.is(attempts.body.data.length, 1);
  assert.is(attempts.body.data[0].origin, 'automatic');
  assert.is(attempts.body.data[0].status, 'succeeded');
});

t('rejections: key, type, permissions, size, duplicates, payloads', async ({ b }) => {
  const item = { key: 'x', payload: { email: 'x@example.com', name: 'X' } };
  const noKey = await b.api('POST', '/api/v3/operations/batches', {
    body: { type: 'users.upsert', items: [item] },
  });
  assert.is(noKey.body.error.code, 'idempotency_key_required');

  const unknown = await submit(b, 'users.explode', [item]);
  assert.is(unknown.status, 422);
  assert.is(unknown.body.error.code, 'operation_type_unknown');
  // The detail names what a client may submit, never the internal types (resets, replays).
  const [detail] = unknown.body.error.details;
  assert.equal([detail.field, detail.code], ['type', 'invalid_value']);
  const named = detail.message.split(', ');
  assert.ok(named.includes('users.upsert'), named.join());
  for (const internal of ['sandbox.reset', 'sandbox.scenario', 'webhook.replay', 'plan.apply'])
    assert.not.ok(named.includes(internal), internal);
  const internal = await submit(b, 'sandbox.reset', [{ key: 'r', payload: {} }]);
  assert.equal([internal.status, internal.body.error.code], [422, 'operation_type_unknown']);

  const manageOnly = await credentialWith(b, ['operations.manage']);
  const denied = await submit(b, 'users.upsert', [item], { secret: manageOnly.secret });
  assert.is(denied.status, 403);
  assert.is(denied.body.error.code, 'permission_denied');
  assert.equal(denied.body.error.details[0], {
    code: 'missing_permission',
    message: 'users.write',
    reason: 'users.write',
  });
  const writeOnly = await credentialWith(b, ['users.write']);
  const noManage = await submit(b, 'users.upsert', [item], { secret: writeOnly.secret });
  assert.is(noManage.body.error.details[0].reason, 'operations.manage');

  const many = Array.from({ length: 1001 }, (_, i) => ({
    key: `k${i}`,
    payload: { email: `k${i}@example.com`, name: 'K' },
  }));
  const tooMany = await submit(b, 'users.upsert', many);
  assert.is(tooMany.status, 422);
  assert.is(tooMany.body.error.code, 'too_many_items');
  assert.equal(
    tooMany.body.error.details.map((d: any) => [d.field, d.code, d.message]),
    [['items', 'too_many_items', 'At most 1000 items.']],
  );
  // The limit itself is allowed.
  testType(b, 'test.two');
  b.app.services.operations.types['test.two']!.maxItems = 2;
  const two = [0, 1].map((i) => ({ key: `t${i}`, payload: { id: `t${i}` } }));
  assert.is((await submit(b, 'test.two', two)).status, 202);
  const three = await submit(b, 'test.two', [...two, { key: 't2', payload: { id: 't2' } }]);
  assert.is(three.body.error.code, 'too_many_items');

  const dup = await submit(b, 'users.upsert', [item, { ...item }, { ...item, key: 'y' }]);
  assert.is(dup.body.error.code, 'duplicate_item_key');
  assert.equal(
    dup.body.error.details.map((d: any) => [d.field, d.code, d.message]),
    [['items.1.key', 'duplicate_item_key', 'Same key as items.0.']],
  );

  const invalid = await submit(b, 'users.upsert', [
    item,
    { key: 'y', payload: { name: 'No email' } },
    { key: 'z', payload: { email: 'not-an-email', name: 'Z', extra: 1 } },
  ]);
  assert.is(invalid.status, 422);
  assert.is(invalid.body.error.code, 'item_invalid');
  assert.equal(
    invalid.body.error.details.map((d: any) => [d.field, d.code]),
    [
      ['items.1.payload.email', 'required'],
      ['items.2.payload.extra', 'unknown_field'],
      ['items.2.payload.email', 'invalid_email'],
    ],
  );
  const tags = await submit(b, 'tags.assign', [{ key: 't', payload: { user_id: 1 } }]);
  assert.is(tags.body.error.code, 'item_invalid');
  // Nothing was created by any of them.
  const users = await b.api('GET', '/api/v3/users?email=x@example.com');
  assert.equal(users.body.data, []);
});

t(
  'some items fail: partially_succeeded, final, neither resumable nor cancelable',
  async ({ b }) => {
    const u = await b.api('POST', '/api/v3/users', {
      body: { name: 'Dora', email: 'dora@example.com' },
      key: newKey(),
    });
    const tag = await b.api('POST', '/api/v3/tags', { body: { name: 'vip' }, key: newKey() });
    const res = await submit(b, 'tags.assign', [
      { key: 'ok', payload: { user_id: u.body.data.id, tag_id: tag.body.data.id } },
      { key: 'missing-user', payload: { user_id: '999999', tag_id: tag.body.data.id } },
    ]);
    const op = await waitFor(b, res.body.data.id);
    assert.is(op.status, 'partially_succeeded');
    assert.equal(op.progress, { total: 2, done: 1, failed: 1 });
    const items = await allItems(b, op.id);
    assert.is(items[1].status, 'failed');
    assert.is(items[1].retryable, false);
    assert.is(items[1].error.code, 'not_found');
    const failedOnly = await b.api('GET', `/api/v3/operations/${op.id}/items?status=failed`);
    assert.equal(
      failedOnly.body.data.map((i: any) => i.key),
      ['missing-user'],
    );
    const userTags = await b.api('GET', `/api/v3/users/${u.body.data.id}/tags`);
    assert.equal(
      userTags.body.data.map((x: any) => x.name),
      ['vip'],
    );

    const resume = await b.api('POST', `/api/v3/operations/${op.id}/attempts`, { key: newKey() });
    assert.is(resume.status, 422);
    assert.is(resume.body.error.code, 'operation_not_resumable');
    const cancel = await b.api('PATCH', `/api/v3/operations/${op.id}`, {
      body: { cancellation_requested: true },
    });
    assert.is(cancel.status, 422);
    assert.is(cancel.body.error.code, 'operation_not_cancelable');
  },
);

t('every item failing for good: failed, and nothing to resume', async ({ b }) => {
  testType(b, 'test.final');
  const res = await submit(b, 'test.final', [
    { key: 'a', payload: { id: 'a', fail: 'app' } },
    { key: 'b', payload: { id: 'b', fail: 'app' } },
  ]);
  const op = await waitFor(b, res.body.data.id);
  assert.is(op.status, 'failed');
  assert.is(op.error.code, 'domain_rule_violation');
  const resume = await b.api('POST', `/api/v3/operations/${op.id}/attempts`, { key: newKey() });
  assert.is(resume.body.error.code, 'operation_not_resumable');
});

t('a transient failure stops the attempt; a resume runs only what is left', async ({ b }) => {
  const probe = testType(b, 'test.flaky');
  const items = ['a', 'b', 'c', 'd'].map((id) => ({
    key: id,
    payload: id === 'b' ? { id, fail: 'transient' } : { id },
  }));
  const res = await submit(b, 'test.flaky', items);
  const op = await waitFor(b, res.body.data.id);
  assert.is(op.status, 'failed');
  assert.is(op.error.code, 'internal_error');
  assert.equal(op.progress, { total: 4, done: 1, failed: 1 });
  const before = await allItems(b, op.id);
  assert.equal(
    before.map((i) => [i.status, i.retryable]),
    [
      ['succeeded', false],
      ['failed', true],
      ['pending', false],
      ['pending', false],
    ],
  );

  const resume = await b.api('POST', `/api/v3/operations/${op.id}/attempts`, { key: newKey() });
  assert.is(resume.status, 202);
  assert.is(resume.headers.get('location'), `/api/v3/operations/${op.id}`);
  assert.equal(resume.body.data.attempt, { number: 2, status: 'queued' });
  const after = await waitFor(b, op.id);
  assert.is(after.status, 'succeeded');
  assert.equal(after.progress, { total: 4, done: 4, failed: 0 });
  assert.equal(Object.fromEntries(probe.calls), { a: 1, b: 2, c: 1, d: 1 });
  const attempts = await b.api('GET', `/api/v3/operations/${op.id}/attempts`);
  assert.equal(
    attempts.body.data.map((a: any) => [a.number, a.origin, a.status]),
    [
      [1, 'automatic', 'failed'],
      [2, 'manual', 'succeeded'],
    ],
  );
  const items2 = await allItems(b, op.id);
  assert.equal(
    items2.map((i) => i.attempt),
    [1, 2, 2, 2],
  );
});

t(
  'parallel resumes of one failed operation: one 202, the others 422, one new attempt',
  async ({ b }) => {
    testType(b, 'test.flaky');
    const res = await submit(b, 'test.flaky', [
      { key: 'a', payload: { id: 'a' } },
      { key: 'b', payload: { id: 'b', fail: 'transient' } },
    ]);
    const op = await waitFor(b, res.body.data.id);
    assert.is(op.status, 'failed');
    const resumes = await Promise.all(
      Array.from({ length: 6 }, () =>
        b.api('POST', `/api/v3/operations/${op.id}/attempts`, { key: newKey() }),
      ),
    );
    assert.equal(
      resumes.map((r) => r.status).sort(),
      [202, 422, 422, 422, 422, 422],
      JSON.stringify(resumes.map((r) => r.body)),
    );
    for (const r of resumes.filter((r) => r.status === 422))
      assert.is(r.body.error.code, 'operation_not_resumable');
    const after = await waitFor(b, op.id);
    assert.is(after.status, 'succeeded');
    assert.equal(after.progress, { total: 2, done: 2, failed: 0 });
    const attempts = await b.api('GET', `/api/v3/operations/${op.id}/attempts`);
    assert.equal(
      attempts.body.data.map((a: any) => [a.number, a.origin, a.status]),
      [
        [1, 'automatic', 'failed'],
        [2, 'manual', 'succeeded'],
      ],
    );
  },
);

t('cancel a running operation: it stops between items, keeps what it did', async ({ b }) => {
  const probe = testType(b, 'test.slow');
  const items = Array.from({ length: 100 }, (_, i) => ({
    key: `s${i}`,
    payload: { id: `s${i}`, delay: 4 },
  }));
  const res = await submit(b, 'test.slow', items);
  const id = res.body.data.id;
  await waitFor(b, id, (op) => op.status === 'running');
  const cancel = await b.api('PATCH', `/api/v3/operations/${id}`, {
    body: { cancellation_requested: true },
  });
  assert.is(cancel.status, 200);
  assert.is(cancel.body.data.status, 'running');
  assert.is(cancel.body.data.cancellation_requested, true);
  const op = await waitFor(b, id);
  assert.is(op.status, 'canceled');
  assert.is(op.attempt.status, 'canceled');
  // Whole chunks (25 items each, one transaction) committed; nothing after the request ran.
  const done = op.progress.done;
  assert.ok(done > 0 && done < 100 && done % 25 === 0, `done ${done}`);
  assert.is(probe.calls.size, done);
  const all = await allItems(b, id);
  assert.is(all.filter((i) => i.status === 'succeeded').length, done);
  assert.is(all.filter((i) => i.status === 'canceled').length, 100 - done);
  const again = await b.api('PATCH', `/api/v3/operations/${id}`, {
    body: { cancellation_requested: true },
  });
  assert.is(again.body.error.code, 'operation_not_cancelable');
  const withdraw = await b.api('PATCH', `/api/v3/operations/${id}`, {
    body: { cancellation_requested: false },
  });
  assert.is(withdraw.status, 422);
});

t('cancel a queued operation: canceled at once, nothing runs', async () => {
  const b = await boot(); // no workers: the operation stays queued
  try {
    const probe = testType(b, 'test.queued');
    const res = await submit(b, 'test.queued', [{ key: 'a', payload: { id: 'a' } }]);
    const cancel = await b.api('PATCH', `/api/v3/operations/${res.body.data.id}`, {
      body: { cancellation_requested: true },
    });
    assert.is(cancel.body.data.status, 'canceled');
    assert.is(cancel.body.data.cancellation_requested, true);
    assert.equal(cancel.body.data.attempt, { number: 1, status: 'canceled' });
    assert.ok(cancel.body.data.finished_at);
    // The attempt ends when the operation does.
    const attempts = await b.api('GET', `/api/v3/operations/${res.body.data.id}/attempts`);
    assert.equal(
      attempts.body.data.map((a: any) => [a.number, a.status, a.finished_at]),
      [[1, 'canceled', cancel.body.data.finished_at]],
    );
    await b.app.startWorkers();
    await new Promise((r) => setTimeout(r, 100));
    assert.is(probe.calls.size, 0);
    const items = await allItems(b, res.body.data.id);
    assert.is(items[0].status, 'canceled');
  } finally {
    await b.close();
  }
});

t('at most 100 unfinished operations per account and environment', async () => {
  const b = await boot(); // no workers: every operation stays queued
  try {
    const item = [{ key: 'a', payload: { email: 'a@example.com', name: 'A' } }];
    for (let i = 0; i < 100; i++) assert.is((await submit(b, 'users.upsert', item)).status, 202);
    const over = await submit(b, 'users.upsert', item);
    assert.is(over.status, 422);
    assert.is(over.body.error.code, 'operation_backlog_exceeded');
    const test = await b.app.services.accounts.createRootCredential({
      accountId: b.accountId,
      permissions: ['*'],
      test: true,
    });
    const other = await submit(b, 'users.upsert', item, { secret: test.secret });
    assert.is(other.status, 202, 'the test environment has its own backlog');
  } finally {
    await b.close();
  }
});

t("another account's operation is not found", async ({ b }) => {
  const res = await submit(b, 'users.upsert', [
    { key: 'a', payload: { email: 'tenant@example.com', name: 'T' } },
  ]);
  const id = res.body.data.id;
  const other = await b.app.services.accounts.createAccount({ name: 'Other' });
  const root = await b.app.services.accounts.createRootCredential({
    accountId: other.id,
    permissions: ['*'],
  });
  const as = { secret: root.secret };
  for (const [method, path, body] of [
    ['GET', `/api/v3/operations/${id}`],
    ['GET', `/api/v3/operations/${id}/items`],
    ['GET', `/api/v3/operations/${id}/attempts`],
    ['PATCH', `/api/v3/operations/${id}`, { cancellation_requested: true }],
  ] as const) {
    const r = await b.api(method, path, { ...as, body });
    assert.is(r.status, 404, `${method} ${path}`);
  }
  const resume = await b.api('POST', `/api/v3/operations/${id}/attempts`, {
    ...as,
    key: newKey(),
  });
  assert.is(resume.status, 404);
  const reader = await credentialWith(b, ['users.read']);
  const denied = await b.api('GET', `/api/v3/operations/${id}`, { secret: reader.secret });
  assert.is(denied.body.error.code, 'permission_denied');
});

t('operations are swept 30 days after creation', async ({ b }) => {
  const res = await submit(b, 'users.upsert', [
    { key: 'a', payload: { email: 'sweep@example.com', name: 'S' } },
  ]);
  await waitFor(b, res.body.data.id);
  b.clock.advance(29 * DAY);
  await b.app.services.operations.purgeExpired();
  assert.is((await b.api('GET', `/api/v3/operations/${res.body.data.id}`)).status, 200);
  b.clock.advance(2 * DAY);
  await b.app.services.operations.purgeExpired();
  assert.is((await b.api('GET', `/api/v3/operations/${res.body.data.id}`)).status, 404);
});

t.run();
