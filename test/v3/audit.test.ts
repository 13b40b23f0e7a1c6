// The audit trail: every v3 call is recorded; GET /requests/{id} shows it to its own account only;
// a call whose record cannot be written is not confirmed.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';

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
