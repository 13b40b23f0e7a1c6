// Defects found by probing and fuzzing the running server, each pinned through HTTP on both
// engines: unbounded error details, ids and text the store cannot hold, hostile methods and paths,
// cursors replayed on other lists or accounts, empty If-Match, the email rule, client aborts.
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { rawRequest } from '../helpers/raw.ts';

const t = suite<{ b: Booted }>('v3 hardening');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const lastAudit = (b: Booted) => b.app.db('audit_entries').orderBy('id', 'desc').first();

async function newUser(b: Booted, email: string) {
  const res = await b.api('POST', '/api/v3/users', { body: { name: 'Ana', email }, key: newKey() });
  assert.is(res.status, 201);
  return res.body.data;
}

t('3: 80,000 unknown keys answer at most 100 details, in a small response', async ({ b }) => {
  const body: Record<string, unknown> = { name: 'Ana', email: 'ana.big@example.com' };
  for (let i = 0; i < 80_000; i++) body['k' + i] = 1;
  const res = await b.api('POST', '/api/v3/users', { body, key: newKey() });
  assert.is(res.status, 422);
  assert.is(res.body.error.code, 'unknown_field');
  assert.is(res.body.error.details.length, 100);
  assert.equal(res.body.error.details[0], {
    field: 'k0',
    code: 'unknown_field',
    message: 'This field is not allowed.',
  });
  assert.ok(res.text.length < 20_000, `${res.text.length} bytes`);
});

t('6: ids past 2^31-1 are not found, in paths and filters', async ({ b }) => {
  for (const path of [
    '/api/v3/users/2147483648',
    '/api/v3/tags/9999999999',
    '/api/v3/credentials/2147483648',
  ]) {
    const res = await b.api('GET', path);
    assert.is(res.status, 404, path);
    assert.is(res.body.error.code, 'not_found');
  }
  const admin = await b.api(
    'PUT',
    `/api/v3/credentials/${b.credentialId}/administrators/99999999999`,
  );
  assert.is(admin.status, 404);
  const filtered = await b.api('GET', '/api/v3/users?tag_id=2147483648');
  assert.is(filtered.status, 200);
  assert.equal(filtered.body.data, []);
  const ok = await b.api('GET', '/api/v3/users/2147483647');
  assert.is(ok.status, 404);
});

t('6: NUL characters are 422 in bodies and filters, 404 in path ids', async ({ b }) => {
  const tag = await b.api('POST', '/api/v3/tags', { body: { name: 'a\u0000b' }, key: newKey() });
  assert.is(tag.status, 422);
  assert.is(tag.body.error.code, 'validation_failed');
  assert.equal(
    tag.body.error.details.map((d: any) => [d.field, d.code]),
    [['name', 'invalid_characters']],
  );
  const key = await b.api('POST', '/api/v3/users', {
    body: { name: 'Ana', email: 'nul@example.com', utm: { ['utm\u0000source']: 'x' } },
    key: newKey(),
  });
  assert.is(key.status, 422);
  const users = await b.api('GET', '/api/v3/users?email=a%00b');
  assert.is(users.status, 422);
  assert.equal(users.body.error.details[0].parameter, 'email');
  assert.is(users.body.error.details[0].code, 'invalid_characters');
  const tags = await b.api('GET', '/api/v3/tags?name=%00');
  assert.is(tags.status, 422);
  const request = await b.api('GET', '/api/v3/requests/%00');
  assert.is(request.status, 404);
  // A literal backslash-u in a value is not a NUL.
  const literal = await b.api('POST', '/api/v3/tags', {
    body: { name: 'a\\u0000b' },
    key: newKey(),
  });
  assert.is(literal.status, 201);
  assert.is(literal.body.data.name, 'a\\u0000b');
});

t('6: a 100-character name of İ (200 when lower-cased) is stored and found', async ({ b }) => {
  const name = 'İ'.repeat(100);
  const res = await b.api('POST', '/api/v3/tags', { body: { name }, key: newKey() });
  assert.is(res.status, 201);
  assert.is(res.body.data.name, name);
  const found = await b.api('GET', `/api/v3/tags?name=${encodeURIComponent(name)}`);
  assert.equal(
    found.body.data.map((x: any) => x.id),
    [res.body.data.id],
  );
});

t('7: UNSUBSCRIBE is 405, and other calls of the same moment are unharmed', async ({ b }) => {
  const calls = Array.from({ length: 40 }, () => b.api('GET', '/api/v3/credentials/current'));
  const odd = rawRequest(b.url + '/api/v3/users', 'UNSUBSCRIBE', [
    ['Authorization', `Bearer ${b.secret}`],
  ]);
  const [weird, ...rest] = await Promise.all([odd, ...calls]);
  assert.is(weird.status, 405);
  assert.is(weird.body.error.code, 'method_not_allowed');
  assert.equal(
    rest.map((r) => r.status),
    rest.map(() => 200),
  );
  const entry = await b.app
    .db('audit_entries')
    .where({ status: 405, method: 'UNSUBSCRIB' })
    .first();
  assert.ok(entry, 'the odd call is audited, its method cut to the column');
});

t(
  '8: the source limit applies to unknown routes and wrong methods, paths are bounded',
  async () => {
    const b = await boot({ env: { RATE_LIMIT_SOURCE: '4' } });
    try {
      const long = '/api/v3/' + 'x'.repeat(1900);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++)
        statuses.push((await b.api('GET', long, { secret: null })).status);
      assert.equal(statuses, [404, 404, 404, 404, 429, 429]);
      const wrong = await b.api('PATCH', '/api/v3/users', { secret: null });
      assert.is(wrong.status, 429);
      const entry = await b.app.db('audit_entries').where({ status: 404 }).first();
      assert.is(entry.path.length, 512);
      assert.ok(long.startsWith(entry.path));
    } finally {
      await b.close();
    }
  },
);

t('10: a client that hangs up mid-body is logged at info and audited as 499', async ({ b }) => {
  const logger = b.app.logger as any;
  const errors: unknown[] = [];
  const infos: any[] = [];
  const { error, info } = logger;
  logger.error = (...a: unknown[]) => errors.push(a);
  logger.info = (o: any) => infos.push(o);
  try {
    const { port } = new URL(b.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      'POST /api/v3/users HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
        `Authorization: Bearer ${b.secret}\r\nContent-Type: application/json\r\n` +
        `Idempotency-Key: ${newKey()}\r\nContent-Length: 1000\r\n\r\n{"name":`,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    let entry: any;
    for (let i = 0; i < 100 && entry?.status !== 499; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      entry = await lastAudit(b);
    }
    assert.is(entry.status, 499);
    assert.is(entry.operation_id, 'createUser');
    assert.equal(errors, []);
    const line = infos.find((o) => o?.status === 499);
    assert.is(line.client_closed, true);
  } finally {
    logger.error = error;
    logger.info = info;
  }
});

t('12: long or undecodable path ids are 404, never a retryable 503', async ({ b }) => {
  for (const path of [
    '/api/v3/users/%ff',
    '/api/v3/users/%',
    '/api/v3/users/' + '1'.repeat(101),
    '/api/v3/users/' + 'a'.repeat(300),
    '/api/v3/requests/' + 'r'.repeat(150),
    '/api/v3/tags/%c3%28',
  ]) {
    const res = await b.api('GET', path);
    assert.is(res.status, 404, path);
    assert.is(res.body.error.code, 'not_found');
  }
  const unknown = await b.api('GET', '/api/v3/u%ffsers/1');
  assert.is(unknown.body.error.code, 'not_found');
});

t('12: a cursor works only on its own list and account', async ({ b }) => {
  for (let i = 0; i < 3; i++) await newUser(b, `cursor${i}@example.com`);
  for (let i = 0; i < 2; i++) {
    const res = await b.api('POST', '/api/v3/credentials', {
      body: { name: `c${i}`, permissions: ['users.read'] },
      key: newKey(),
    });
    assert.is(res.status, 201);
  }
  const creds = await b.api('GET', '/api/v3/credentials?limit=1');
  const credCursor = encodeURIComponent(creds.body.page.next_cursor);
  const onUsers = await b.api('GET', `/api/v3/users?limit=1&cursor=${credCursor}`);
  assert.is(onUsers.status, 400);
  assert.is(onUsers.body.error.code, 'invalid_cursor');

  const users = await b.api('GET', '/api/v3/users?limit=1');
  const userCursor = encodeURIComponent(users.body.page.next_cursor);
  const same = await b.api('GET', `/api/v3/users?limit=1&cursor=${userCursor}`);
  assert.is(same.status, 200);

  const other = await b.app.services.accounts.createAccount({ name: 'Other school' });
  const root = await b.app.services.accounts.createRootCredential({
    accountId: other.id,
    permissions: ['*'],
    name: 'Root',
  });
  await b.api('POST', '/api/v3/users', {
    body: { name: 'Bia', email: 'bia@example.com' },
    key: newKey(),
    secret: root.secret,
  });
  const cross = await b.api('GET', `/api/v3/users?limit=1&cursor=${userCursor}`, {
    secret: root.secret,
  });
  assert.is(cross.status, 400);
  assert.is(cross.body.error.code, 'invalid_cursor');
});

t('13: an empty or malformed If-Match fails the precondition', async ({ b }) => {
  const u = await newUser(b, 'ifmatch@example.com');
  const path = `/api/v3/users/${u.id}`;
  const auth: [string, string] = ['Authorization', `Bearer ${b.secret}`];
  const json: [string, string] = ['Content-Type', 'application/json'];
  const body = JSON.stringify({ name: 'Bia' });
  for (const value of ['', 'abc', `${u.revision}`, `"${u.revision}", junk`, '*, "x"']) {
    const patch = await rawRequest(b.url + path, 'PATCH', [auth, json, ['If-Match', value]], body);
    assert.is(patch.status, 412, `PATCH If-Match: ${value}`);
    assert.is(patch.body.error.code, 'revision_mismatch');
  }
  const del = await rawRequest(b.url + path, 'DELETE', [auth, ['If-Match', '']]);
  assert.is(del.status, 412);
  const good = await b.api('PATCH', path, {
    body: { name: 'Bia' },
    headers: { 'if-match': `W/"${u.revision}"` },
  });
  assert.is(good.status, 200);
  const star = await b.api('DELETE', path, { headers: { 'if-match': '*' } });
  assert.is(star.status, 204);
});

t('14: the contract and the server agree on the email rule', async ({ b }) => {
  const doc = (await b.api('GET', '/api/v3/openapi.json')).body;
  const rule = new RegExp(doc.components.schemas.Email['x-format-pattern'], 'i');
  for (const [email, accepted] of [
    ['ana@localhost', true],
    ['Ana.Souza+vip@mail.example.co', true],
    ['ana@example.com', true],
    ['"quoted"@example.com', false],
    ['ana@[127.0.0.1]', false],
    ['ana@-example.com', false],
    ['no-at-sign', false],
  ] as const) {
    assert.is(rule.test(email), accepted, `contract: ${email}`);
    const res = await b.api('POST', '/api/v3/users', {
      body: { name: 'Ana', email },
      key: newKey(),
    });
    assert.is(res.status, accepted ? 201 : 422, `server: ${email}`);
    if (!accepted)
      assert.equal(res.body.error.details, [
        { field: 'email', code: 'invalid_email', message: 'Must be a valid email address.' },
      ]);
  }
});

t.run();
