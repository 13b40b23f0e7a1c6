// Webhook endpoints through HTTP: registration (the secret shown once), reads, changes, deletion,
// permissions, X-Client-Request-Id, and the refusal of private targets, at registration and again
// at delivery time (a name that resolves to an internal address).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { createUser, createWebhook, settle } from '../helpers/webhooks.ts';

const W = '/api/v3/webhooks';

const t = suite<{ b: Booted; rcv: Receiver }>('v3 webhooks: endpoints');
t.before(async (ctx) => {
  ctx.b = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  ctx.rcv = await startReceiver();
});
t.after(async (ctx) => {
  await ctx.rcv.close();
  await ctx.b.close();
});

t(
  'create shows the signing secret once; reads never do; a replay is refused',
  async ({ b, rcv }) => {
    const key = newKey();
    const body = {
      url: rcv.url,
      event_types: ['user.created', 'tag.assigned'],
      description: 'CRM',
    };
    const res = await b.api('POST', W, { body, key });
    assert.is(res.status, 201);
    const w = res.body.data;
    assert.match(w.secret, /^whsec_[A-Za-z0-9+/=]{40,}$/);
    assert.equal(
      { ...w, secret: undefined, id: undefined, revision: undefined },
      {
        object: 'webhook',
        url: rcv.url,
        description: 'CRM',
        event_types: ['user.created', 'tag.assigned'],
        payload_version: '1',
        status: 'enabled',
        disabled_reason: null,
        signing_secrets: [
          { hint: `${w.secret.slice(0, 10)}...`, created_at: w.created_at, expires_at: null },
        ],
        created_at: w.created_at,
        updated_at: w.created_at,
        secret: undefined,
        id: undefined,
        revision: undefined,
      },
    );
    assert.is(res.headers.get('etag'), `"${w.revision}"`);
    const again = await b.api('POST', W, { body, key });
    assert.is(again.status, 409);
    assert.is(again.body.error.code, 'secret_not_replayable');

    const got = await b.api('GET', `${W}/${w.id}`);
    assert.is(got.status, 200);
    assert.not.ok('secret' in got.body.data);
    assert.not.ok(got.text.includes(w.secret));
    const list = await b.api('GET', W);
    assert.ok(list.body.data.some((x: any) => x.id === w.id));
    assert.not.ok(list.text.includes(w.secret));
    assert.not.ok(list.text.includes(w.secret.slice(10, 20)));
    // Stored sealed, never in clear.
    const rows = await b.app.db('webhook_secrets').where({ endpoint_id: Number(w.id) });
    assert.is(rows.length, 1);
    assert.not.ok(JSON.stringify(rows).includes(w.secret.slice(6)));
  },
);

t(
  'PATCH changes url, types and status (If-Match); payload_version stays pinned',
  async ({ b, rcv }) => {
    const { id, webhook } = await createWebhook(b, rcv.url);
    const stale = await b.api('PATCH', `${W}/${id}`, {
      body: { status: 'disabled' },
      headers: { 'if-match': '"nope"' },
    });
    assert.is(stale.status, 412);
    const res = await b.api('PATCH', `${W}/${id}`, {
      body: { status: 'disabled', event_types: ['user.updated'], url: `${rcv.url}/v2` },
      headers: { 'if-match': `"${webhook.revision}"` },
    });
    assert.is(res.status, 200);
    assert.equal(
      [res.body.data.status, res.body.data.disabled_reason, res.body.data.event_types],
      ['disabled', 'disabled_by_client', ['user.updated']],
    );
    assert.is(res.body.data.url, `${rcv.url}/v2`);
    const pinned = await b.api('PATCH', `${W}/${id}`, { body: { payload_version: '1' } });
    assert.is(pinned.status, 422);
    assert.is(pinned.body.error.code, 'unknown_field');
    const enabled = await b.api('PATCH', `${W}/${id}`, { body: { status: 'enabled' } });
    assert.equal([enabled.body.data.status, enabled.body.data.disabled_reason], ['enabled', null]);
    const filtered = await b.api('GET', `${W}?status=disabled`);
    assert.not.ok(filtered.body.data.some((x: any) => x.id === id));
  },
);

t('DELETE removes the endpoint; it is 404 afterwards', async ({ b, rcv }) => {
  const { id } = await createWebhook(b, rcv.url);
  assert.is((await b.api('DELETE', `${W}/${id}`)).status, 204);
  assert.is((await b.api('GET', `${W}/${id}`)).status, 404);
  assert.is((await b.api('DELETE', `${W}/${id}`)).status, 404);
  assert.is((await b.api('GET', `${W}/${id}/deliveries`)).status, 404);
  const list = await b.api('GET', W);
  assert.not.ok(list.body.data.some((x: any) => x.id === id));
});

t('registration refuses unknown event types, versions and non-http URLs', async ({ b, rcv }) => {
  const post = (body: object) => b.api('POST', W, { body, key: newKey() });
  const unknown = await post({ url: rcv.url, event_types: ['user.created', 'user.exploded'] });
  assert.is(unknown.status, 422);
  assert.equal(
    unknown.body.error.details.map((d: any) => [d.field, d.code]),
    [['event_types.1', 'invalid_value']],
  );
  const version = await post({ url: rcv.url, event_types: ['*'], payload_version: '9' });
  assert.is(version.status, 422);
  assert.is(version.body.error.details[0].field, 'payload_version');
  for (const url of [
    'ftp://example.com/x',
    'http://user:pw@example.com/x',
    'https://a.example/#x',
  ]) {
    const res = await post({ url, event_types: ['*'] });
    assert.is(res.status, 422, url);
    assert.is(res.body.error.details[0].field, 'url', url);
  }
});

t('permissions: webhooks.read reads, webhooks.manage changes', async ({ b, rcv }) => {
  const { id } = await createWebhook(b, rcv.url);
  const reader = await credentialWith(b, ['webhooks.read']);
  assert.is((await b.api('GET', `${W}/${id}`, { secret: reader.secret })).status, 200);
  const denied = await b.api('POST', W, {
    body: { url: rcv.url, event_types: ['*'] },
    key: newKey(),
    secret: reader.secret,
  });
  assert.is(denied.status, 403);
  assert.is(denied.body.error.details[0].reason, 'webhooks.manage');
  const none = await credentialWith(b, ['users.read']);
  assert.is((await b.api('GET', `${W}/${id}/deliveries`, { secret: none.secret })).status, 403);
});

t('X-Client-Request-Id is checked, echoed and never replaces X-Request-Id', async ({ b, rcv }) => {
  const { id } = await createWebhook(b, rcv.url);
  const ok = await b.api('GET', `${W}/${id}/deliveries`, {
    headers: { 'X-Client-Request-Id': 'crm.sync_2026-11-22.001' },
  });
  assert.is(ok.status, 200);
  assert.is(ok.headers.get('x-client-request-id'), 'crm.sync_2026-11-22.001');
  assert.match(ok.headers.get('x-request-id')!, /^req_[0-9a-f]{24}$/);
  for (const bad of ['x'.repeat(65), 'has space', 'semi;colon']) {
    const res = await b.api('GET', `${W}/${id}/deliveries`, {
      headers: { 'X-Client-Request-Id': bad },
    });
    assert.is(res.status, 422, bad);
    assert.equal(
      res.body.error.details.map((d: any) => [d.parameter, d.code]),
      [['X-Client-Request-Id', 'invalid_format']],
    );
    assert.is(res.headers.get('x-client-request-id'), null);
  }
  const max = 'a'.repeat(64);
  const edge = await b.api('GET', `${W}/${id}/deliveries`, {
    headers: { 'X-Client-Request-Id': max },
  });
  assert.is(edge.headers.get('x-client-request-id'), max);
  // Other operations do not declare it: ignored there.
  const other = await b.api('GET', `${W}/${id}`, { headers: { 'X-Client-Request-Id': 'a b' } });
  assert.is(other.status, 200);
  assert.is(other.headers.get('x-client-request-id'), null);
});

t.run();

// ---------------------------------------------------------------------------------------------

const p = suite<{ b: Booted; rcv: Receiver }>('v3 webhooks: private targets');
p.before(async (ctx) => {
  ctx.b = await boot(); // WEBHOOK_ALLOW_PRIVATE_TARGETS unset: false
  ctx.rcv = await startReceiver();
});
p.after(async (ctx) => {
  await ctx.rcv.close();
  await ctx.b.close();
});

p('private, loopback and link-local targets are refused at registration', async ({ b }) => {
  for (const url of [
    'http://127.0.0.1:8080/hooks',
    'http://localhost/hooks',
    'http://api.localhost/hooks',
    'http://[::1]/hooks',
    'http://10.1.2.3/hooks',
    'http://192.168.0.10/hooks',
    'http://169.254.169.254/latest/meta-data',
    'http://[::ffff:127.0.0.1]/hooks',
    'http://[fe80::1]/hooks',
    'http://2130706433/hooks',
    'http://0.0.0.0/hooks',
  ]) {
    const res = await b.api('POST', W, { body: { url, event_types: ['*'] }, key: newKey() });
    assert.is(res.status, 422, url);
    assert.equal(
      res.body.error.details.map((d: any) => [d.field, d.code]),
      [['url', 'private_target']],
      url,
    );
  }
  const patch = await createWebhook(b, 'https://hooks.example.com/school');
  const res = await b.api('PATCH', `${W}/${patch.id}`, { body: { url: 'http://127.0.0.1/' } });
  assert.is(res.status, 422);
  // Tests reach no real host: this one must receive nothing.
  assert.is((await b.api('DELETE', `${W}/${patch.id}`)).status, 204);
});

p(
  'a name that resolves to a private address at delivery time reaches nothing',
  async ({ b, rcv }) => {
    await b.app.startWorkers();
    const port = new URL(rcv.url).port;
    const { id } = await createWebhook(b, `http://hooks.example.test:${port}/hooks`);
    const sender = b.app.services.webhookDispatcher.sender;
    const asked: string[] = [];
    // DNS rebinding: the name now points at this machine.
    sender.lookup = async (host) => {
      asked.push(host);
      return [{ address: '127.0.0.1', family: 4 }];
    };
    await createUser(b);
    const [d] = await settle(b, id, (l) => l.length === 1 && l[0].attempts_count === 1);
    assert.is(d.status, 'failed');
    assert.is(d.last_attempt.http_status, null);
    assert.is(d.last_attempt.transport_error, 'dns: hooks.example.test has no public address');
    assert.equal(asked, ['hooks.example.test']);
    assert.is(rcv.received.length, 0, 'no connection was made');
  },
);

p.run();
