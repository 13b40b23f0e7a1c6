import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted }>('v3 users');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

// prettier-ignore
const UTM_KEYS = ['adcampaign', 'adid', 'fbclid', 'gclid', 'groupid', 'page_name', 'utm_content', 'utm_medium', 'utm_source', 'utm_term'];
const NULL_UTM = Object.fromEntries(UTM_KEYS.map((k) => [k, null]));

async function createUser(b: Booted, body: Record<string, unknown>, secret?: string) {
  return b.api('POST', '/api/v3/users', { body, key: newKey(), secret });
}

t('POST /users creates a student with every v1 field, in English', async ({ b }) => {
  const res = await createUser(b, {
    name: '  Ana Souza ',
    email: 'Ana@Example.com',
    phone: ' +5511988887777 ',
    document: '529.982.247-25',
    job_title: 'Teacher',
    company_size: '',
    utm: { utm_source: 'google', gclid: 'abc' },
  });
  assert.is(res.status, 201);
  const u = res.body.data;
  assert.match(u.id, /^[1-9][0-9]*$/);
  assert.match(u.revision, /^[0-9a-f]{16}$/);
  assert.match(u.auto_login_token, /^[0-9A-Za-z]{43}$/);
  assert.is(res.headers.get('etag'), `"${u.revision}"`);
  assert.equal(u, {
    object: 'user',
    id: u.id,
    name: 'Ana Souza',
    email: 'Ana@Example.com',
    phone: '+5511988887777',
    document: '52998224725',
    job_title: 'Teacher',
    company_name: null,
    company_size: null,
    free: false,
    points: 0,
    // PUBLIC_BASE_URL defaults to http://HOST:PORT of the configuration (not the test port).
    auto_login_url: `${b.url}/login/auto?token=${u.auto_login_token}`,
    auto_login_token: u.auto_login_token,
    utm: { ...NULL_UTM, utm_source: 'google', gclid: 'abc' },
    started_at: null,
    last_access_at: null,
    revision: u.revision,
    created_at: u.created_at,
    updated_at: u.created_at,
  });
  assert.ok(Math.abs(Date.parse(u.created_at) - b.clock.now().getTime()) < 5000);

  const got = await b.api('GET', `/api/v3/users/${u.id}`);
  assert.is(got.status, 200);
  assert.equal(got.body.data, u);
  assert.is(got.headers.get('etag'), `"${u.revision}"`);
});

t('a replayed POST returns the recorded user and creates nothing', async ({ b }) => {
  const key = newKey();
  const body = { name: 'Replay', email: 'replay@example.com' };
  const first = await b.api('POST', '/api/v3/users', { body, key });
  const again = await b.api('POST', '/api/v3/users', { body, key });
  assert.is(first.status, 201);
  assert.is(again.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.body, first.body);
  const list = await b.api('GET', '/api/v3/users?email=replay@example.com');
  assert.is(list.body.data.length, 1);
});

t('emails are unique per account, case-insensitively', async ({ b }) => {
  assert.is((await createUser(b, { name: 'Bia', email: 'bia@example.com' })).status, 201);
  const dup = await createUser(b, { name: 'Bia 2', email: 'BIA@example.COM' });
  assert.is(dup.status, 409);
  assert.is(dup.body.error.code, 'already_exists');
  assert.is(dup.body.error.details.length, 1);
  assert.is(dup.body.error.details[0].field, 'email');
  assert.is(dup.body.error.details[0].code, 'already_exists');
});

/** Resolves once a session of this database waits for a lock in an insert into users. */
async function userInsertWaits(b: Booted) {
  for (let i = 0; i < 500; i++) {
    const { rows } = await b.app.db.raw(
      "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' " +
        "and datname = current_database() and query ilike '%insert into users%'",
    );
    if (rows[0].n > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the insert never waited');
}

// PostgreSQL checks the email and inserts in one statement (ON CONFLICT DO NOTHING): a create of
// the same email by a transaction still open makes it wait, then decides as that one ends.
t('PostgreSQL: a create racing an open one of the same email waits for its end', async ({ b }) => {
  if (!process.env.TEST_DATABASE_URL) return;
  for (const end of ['commit', 'rollback'] as const) {
    const email = `race-${end}@example.com`;
    const held = await b.app.db.transaction();
    const other = await b.app.services.users.create(
      b.accountId,
      { name: 'Other', email },
      { tx: held },
    );
    const key = newKey();
    const racing = b.api('POST', '/api/v3/users', { body: { name: 'Racer', email }, key });
    try {
      await userInsertWaits(b);
    } finally {
      await held[end]();
    }
    const res = await racing;
    const list = await b.api('GET', `/api/v3/users?email=${email}`);
    const again = await b.api('POST', '/api/v3/users', { body: { name: 'Racer', email }, key });
    if (end === 'commit') {
      assert.is(res.status, 409);
      assert.equal(res.body.error.details, [
        { field: 'email', code: 'already_exists', message: res.body.error.details[0].message },
      ]);
      assert.equal(
        list.body.data.map((u: any) => [u.id, u.name]),
        [[String(other.id), 'Other']],
      );
      // The 409 is the key's recorded answer.
      assert.is(again.status, 409);
      assert.is(again.headers.get('idempotent-replayed'), 'true');
    } else {
      assert.is(res.status, 201);
      assert.equal(
        list.body.data.map((u: any) => [u.id, u.name]),
        [[res.body.data.id, 'Racer']],
      );
      assert.is(again.status, 201);
      assert.equal(again.body, res.body);
    }
  }
});

t('CPF: check digits verified, punctuation optional, digits stored', async ({ b }) => {
  for (const document of ['529.982.247-26', '111.111.111-11', '1234', '529.982.247-2x']) {
    const res = await createUser(b, {
      name: 'Cpf',
      email: `cpf-${document}@example.com`,
      document,
    });
    assert.is(res.status, 422, document);
    assert.is(res.body.error.code, 'validation_failed');
    assert.equal(
      res.body.error.details.map((d: any) => [d.field, d.code]),
      [['document', 'invalid_document']],
    );
  }
  const ok = await createUser(b, {
    name: 'Cpf',
    email: 'cpf-ok@example.com',
    document: '52998224725',
  });
  assert.is(ok.status, 201);
  assert.is(ok.body.data.document, '52998224725');
});

t('body validation: unknown field, missing email, blank name', async ({ b }) => {
  const unknown = await createUser(b, { name: 'X', email: 'x@example.com', nickname: 'x' });
  assert.is(unknown.status, 422);
  assert.is(unknown.body.error.code, 'unknown_field');
  assert.equal(unknown.body.error.details[0].field, 'nickname');

  const missing = await createUser(b, { name: 'X' });
  assert.is(missing.status, 422);
  assert.is(missing.body.error.code, 'validation_failed');
  assert.equal(
    missing.body.error.details.map((d: any) => [d.field, d.code]),
    [['email', 'required']],
  );

  const blank = await createUser(b, { name: '   ', email: 'blank@example.com' });
  assert.is(blank.status, 422);
  assert.is(blank.body.error.details[0].field, 'name');
});

t('PATCH changes only present fields; null clears; If-Match guards', async ({ b }) => {
  const created = (
    await createUser(b, {
      name: 'Caio',
      email: 'caio@example.com',
      phone: '+551100000000',
      utm: { utm_source: 'fb', utm_medium: 'cpc' },
    })
  ).body.data;
  const path = `/api/v3/users/${created.id}`;

  const stale = await b.api('PATCH', path, {
    body: { job_title: 'Nope' },
    headers: { 'if-match': '"0000000000000000"' },
  });
  assert.is(stale.status, 412);
  assert.is(stale.body.error.code, 'revision_mismatch');

  const res = await b.api('PATCH', path, {
    body: {
      job_title: 'Engineer',
      phone: null,
      free: true,
      utm: { utm_medium: null, utm_term: 'x' },
    },
    headers: { 'if-match': `"${created.revision}"` },
  });
  assert.is(res.status, 200);
  const u = res.body.data;
  assert.is(u.job_title, 'Engineer');
  assert.is(u.phone, null);
  assert.is(u.free, true);
  assert.is(u.name, 'Caio');
  assert.is(u.email, 'caio@example.com');
  assert.equal(u.utm, { ...NULL_UTM, utm_source: 'fb', utm_term: 'x' });
  assert.is.not(u.revision, created.revision);
  assert.is(res.headers.get('etag'), `"${u.revision}"`);

  // The old ETag is now stale.
  const again = await b.api('PATCH', path, {
    body: { name: 'Caio 2' },
    headers: { 'if-match': `"${created.revision}"` },
  });
  assert.is(again.status, 412);

  // Without If-Match the update applies to the current revision (and inside an idempotent tx).
  const plain = await b.api('PATCH', path, { body: { name: 'Caio 3' }, key: newKey() });
  assert.is(plain.status, 200);
  assert.is(plain.body.data.name, 'Caio 3');

  const bad = await b.api('PATCH', path, { body: { document: '123.456.789-00' } });
  assert.is(bad.status, 422);
  assert.is(bad.body.error.details[0].code, 'invalid_document');

  const empty = await b.api('PATCH', path, { body: {} });
  assert.is(empty.status, 422);
  assert.is(empty.body.error.code, 'validation_failed');
});

t('PATCH email re-checks uniqueness; own email in another case is fine', async ({ b }) => {
  await createUser(b, { name: 'Dani', email: 'dani@example.com' });
  const eva = (await createUser(b, { name: 'Eva', email: 'eva@example.com' })).body.data;
  const clash = await b.api('PATCH', `/api/v3/users/${eva.id}`, {
    body: { email: 'DANI@example.com' },
  });
  assert.is(clash.status, 409);
  assert.is(clash.body.error.code, 'already_exists');
  const recase = await b.api('PATCH', `/api/v3/users/${eva.id}`, {
    body: { email: 'Eva@Example.com' },
  });
  assert.is(recase.status, 200);
  assert.is(recase.body.data.email, 'Eva@Example.com');
});

t('DELETE removes the student; If-Match honoured; then 404', async ({ b }) => {
  const u = (await createUser(b, { name: 'Gil', email: 'gil@example.com' })).body.data;
  const path = `/api/v3/users/${u.id}`;
  const stale = await b.api('DELETE', path, { headers: { 'if-match': '"ffff"' } });
  assert.is(stale.status, 412);
  assert.is(stale.body.error.code, 'revision_mismatch');
  const res = await b.api('DELETE', path, { headers: { 'if-match': `"${u.revision}"` } });
  assert.is(res.status, 204);
  assert.is((await b.api('GET', path)).body.error.code, 'not_found');
  assert.is((await b.api('DELETE', path)).status, 404);
  // The email is free again.
  assert.is((await createUser(b, { name: 'Gil', email: 'GIL@example.com' })).status, 201);
});

t('unknown and non-numeric ids are not_found', async ({ b }) => {
  for (const id of ['999999', 'abc', '0']) {
    const res = await b.api('GET', `/api/v3/users/${id}`);
    assert.is(res.status, 404, id);
    assert.is(res.body.error.code, 'not_found');
  }
});

t('permissions: read-only credential can read, not write', async ({ b }) => {
  const reader = await credentialWith(b, ['users.read']);
  const denied = await createUser(b, { name: 'R', email: 'r@example.com' }, reader.secret);
  assert.is(denied.status, 403);
  assert.is(denied.body.error.code, 'permission_denied');
  assert.is(denied.body.error.details[0].reason, 'users.write');
  const list = await b.api('GET', '/api/v3/users', { secret: reader.secret });
  assert.is(list.status, 200);
  const none = await credentialWith(b, ['tags.read']);
  assert.is((await b.api('GET', '/api/v3/users', { secret: none.secret })).status, 403);
});

t("another account's student is 404, exactly like a missing one", async ({ b }) => {
  const mine = (await createUser(b, { name: 'Mine', email: 'mine@example.com' })).body.data;
  const { id: other } = await b.app.services.accounts.createAccount({ name: 'Other school' });
  const cred = await b.app.services.accounts.createRootCredential({
    accountId: other,
    permissions: ['*'],
  });
  const path = `/api/v3/users/${mine.id}`;
  const get = await b.api('GET', path, { secret: cred.secret });
  assert.is(get.status, 404);
  assert.is(get.body.error.code, 'not_found');
  assert.is((await b.api('PATCH', path, { body: { name: 'x' }, secret: cred.secret })).status, 404);
  assert.is((await b.api('DELETE', path, { secret: cred.secret })).status, 404);
  assert.is((await b.api('GET', `${path}/tags`, { secret: cred.secret })).status, 404);
  // Same email in another account is allowed, and lists never cross accounts.
  const theirs = await createUser(b, { name: 'Theirs', email: 'MINE@example.com' }, cred.secret);
  assert.is(theirs.status, 201);
  const list = await b.api('GET', '/api/v3/users', { secret: cred.secret });
  assert.equal(
    list.body.data.map((u: any) => u.id),
    [theirs.body.data.id],
  );
  assert.is((await b.api('GET', path)).body.data.name, 'Mine');
});

t('list filters: email (case-insensitive), created_after, created_before', async ({ b }) => {
  const before = b.clock.now().toISOString();
  b.clock.advance(60_000);
  const mark = b.clock.now().toISOString();
  const h = (await createUser(b, { name: 'Hugo', email: 'hugo@example.com' })).body.data;
  b.clock.advance(60_000);
  const i = (await createUser(b, { name: 'Iris', email: 'iris@example.com' })).body.data;

  const byEmail = await b.api('GET', '/api/v3/users?email=HUGO%40example.com');
  assert.is(byEmail.status, 200);
  assert.equal(
    byEmail.body.data.map((u: any) => u.id),
    [h.id],
  );
  const after = await b.api('GET', `/api/v3/users?created_after=${encodeURIComponent(mark)}`);
  assert.equal(
    after.body.data.map((u: any) => u.id),
    [i.id, h.id],
  );
  const window = await b.api(
    'GET',
    `/api/v3/users?sort=created_at&created_after=${encodeURIComponent(mark)}&created_before=${encodeURIComponent(i.created_at)}`,
  );
  assert.equal(
    window.body.data.map((u: any) => u.id),
    [h.id],
  );
  const old = await b.api('GET', `/api/v3/users?created_before=${encodeURIComponent(before)}`);
  assert.not.ok(old.body.data.some((u: any) => u.id === h.id || u.id === i.id));
  for (const bad of ['yesterday', '2016-12-31T23:59:60Z']) {
    const res = await b.api('GET', `/api/v3/users?created_after=${encodeURIComponent(bad)}`);
    assert.is(res.status, 422, bad);
    assert.is(res.body.error.details[0].parameter, 'created_after');
  }
});

t.run();
