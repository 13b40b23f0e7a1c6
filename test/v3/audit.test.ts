// The audit trail: every v3 call is recorded; GET /requests/{id} shows it to its own account only,
// GET /requests lists them newest first (filters, cursor pages); a call whose record cannot be
// written is not confirmed.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted }>('audit');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

t('a call is recorded and can be retrieved by its request id', async ({ b }) => {
  const call = await b.api('GET', '/api/v3/credentials?limit=1');
  const id = call.headers.get('x-request-id')!;
  const res = await b.api('GET', `/api/v3/requests/${id}`);
  assert.is(res.status, 200);
  const e = res.body.data;
  assert.equal(
    {
      id: e.id,
      op: e.operation_id,
      method: e.method,
      route: e.route,
      path: e.path,
      status: e.status,
      cred: e.credential_id,
      admin: e.admin_id,
    },
    {
      id,
      op: 'listCredentials',
      method: 'GET',
      route: '/credentials',
      path: '/api/v3/credentials',
      status: 200,
      cred: String(b.credentialId),
      admin: null,
    },
  );
  assert.ok(e.duration_ms >= 0);
});

t('failed calls are recorded with their status', async ({ b }) => {
  const call = await b.api('POST', '/api/v3/credentials', { key: newKey(), body: {} });
  assert.is(call.status, 422);
  const res = await b.api('GET', `/api/v3/requests/${call.headers.get('x-request-id')}`);
  assert.is(res.body.data.status, 422);
  assert.is(res.body.data.operation_id, 'createCredential');
});

t('another account cannot read the entry', async ({ b }) => {
  const call = await b.api('GET', '/api/v3/capabilities');
  const { id } = await b.app.services.accounts.createAccount({ name: 'Other' });
  const other = await b.app.services.accounts.createRootCredential({
    accountId: id,
    permissions: ['*'],
  });
  const res = await b.api('GET', `/api/v3/requests/${call.headers.get('x-request-id')}`, {
    secret: other.secret,
  });
  assert.is(res.status, 404);
  assert.is(res.body.error.code, 'not_found');
});

t(
  'GET /requests: newest first, filtered by status class, status, operation and since',
  async ({ b }) => {
    const since = new Date().toISOString();
    const ids: string[] = [];
    const call = async (method: string, path: string, body?: object) => {
      const r = await b.api(method, path, body ? { key: newKey(), body } : {});
      ids.push(r.headers.get('x-request-id')!);
      return r.status;
    };
    const statuses = [
      await call('GET', '/api/v3/tags'),
      await call('GET', '/api/v3/users/2147483647'),
      await call('POST', '/api/v3/tags', { name: 'audit-list' }),
      await call('POST', '/api/v3/tags', {}),
    ];
    assert.equal(statuses, [200, 404, 201, 422]);
    const list = async (query: string) => {
      const r = await b.api('GET', `/api/v3/requests?since=${encodeURIComponent(since)}&${query}`);
      assert.is(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };
    const all = await list('limit=200');
    // Newest first; the listing calls themselves are in the trail too, after the four.
    const mine = all.data.filter((e: any) => ids.includes(e.id));
    assert.equal(
      mine.map((e: any) => [e.id, e.method, e.path, e.status, e.operation_id]),
      [
        [ids[3], 'POST', '/api/v3/tags', 422, 'createTag'],
        [ids[2], 'POST', '/api/v3/tags', 201, 'createTag'],
        [ids[1], 'GET', '/api/v3/users/2147483647', 404, 'getUser'],
        [ids[0], 'GET', '/api/v3/tags', 200, 'listTags'],
      ],
    );
    assert.ok(all.data.every((e: any) => e.object === 'request' && e.created_at >= since));
    assert.equal(
      (await list('status=4xx')).data.map((e: any) => e.id),
      [ids[3], ids[1]],
    );
    assert.equal(
      (await list('status=201')).data.map((e: any) => e.id),
      [ids[2]],
    );
    assert.equal(
      (await list('operation_id=createTag')).data.map((e: any) => e.id),
      [ids[3], ids[2]],
    );
    // An instant after every entry: nothing.
    const later = await b.api('GET', '/api/v3/requests?since=2999-01-01T00%3A00%3A00Z');
    assert.equal([later.status, later.body.data], [200, []]);
  },
);

t(
  'GET /requests pages with cursors, checks its parameters and needs requests.read',
  async ({ b }) => {
    const first = await b.api('GET', '/api/v3/requests?limit=2');
    assert.is(first.body.data.length, 2);
    assert.ok(first.body.page.next_cursor);
    const second = await b.api(
      'GET',
      `/api/v3/requests?limit=2&cursor=${encodeURIComponent(first.body.page.next_cursor)}`,
    );
    assert.is(second.status, 200);
    const ids = [...first.body.data, ...second.body.data].map((e: any) => e.id);
    assert.is(new Set(ids).size, 4, 'no entry twice');
    // A cursor is bound to its filters.
    const other = await b.api(
      'GET',
      `/api/v3/requests?limit=2&status=2xx&cursor=${encodeURIComponent(first.body.page.next_cursor)}`,
    );
    assert.is(other.body.error.code, 'invalid_cursor');
    const bad = await b.api('GET', '/api/v3/requests?status=4x');
    assert.equal([bad.status, bad.body.error.details[0].parameter], [422, 'status']);
    const reader = await credentialWith(b, ['users.read']);
    const denied = await b.api('GET', '/api/v3/requests', { secret: reader.secret });
    assert.equal([denied.status, denied.body.error.code], [403, 'permission_denied']);
    const allowed = await credentialWith(b, ['requests.read']);
    const ok = await b.api('GET', '/api/v3/requests', { secret: allowed.secret });
    assert.is(ok.status, 200);
  },
);

t('when the record cannot be written: 503 audit_unavailable', async ({ b }) => {
  const audit = b.app.services.audit;
  const original = audit.record;
  audit.record = async () => {
    throw new Error('disk full');
  };
  try {
    const res = await b.api('GET', `/api/v3/credentials/${b.credentialId}`);
    assert.is(res.status, 503);
    assert.is(res.body.error.code, 'audit_unavailable');
    // The success it replaced had an ETag; the error must not carry it.
    assert.is(res.headers.get('etag'), null);
    assert.is(res.body.error.request_id, res.headers.get('x-request-id'));
  } finally {
    audit.record = original;
  }
});

t.run();
