// Body, content and parameter rules of the v3 pipeline, each with its own code.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { rawRequest } from '../helpers/raw.ts';
import http from 'node:http';

const t = suite<{ b: Booted }>('body');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const post = (b: Booted, raw: string | Buffer, headers: Record<string, string> = {}) =>
  b.api('POST', '/api/v3/credentials', {
    raw,
    key: newKey(),
    headers: { 'content-type': 'application/json', ...headers },
  });

t('406 when Accept does not allow JSON; */* and application/* are fine', async ({ b }) => {
  const res = await b.api('GET', '/api/v3/capabilities', { headers: { accept: 'text/html' } });
  assert.is(res.status, 406);
  assert.is(res.body.error.code, 'not_acceptable');
  for (const accept of ['*/*', 'application/*', 'application/json;q=0.5, text/html']) {
    assert.is((await b.api('GET', '/api/v3/capabilities', { headers: { accept } })).status, 200);
  }
});

t('415 when Content-Type is not JSON', async ({ b }) => {
  const res = await post(b, 'name=x', { 'content-type': 'application/x-www-form-urlencoded' });
  assert.is(res.status, 415);
  assert.is(res.body.error.code, 'unsupported_media_type');
});

t('413 over 1 MiB, by Content-Length and by a chunked stream', async ({ b }) => {
  const big = Buffer.alloc(1024 * 1024 + 10, 'a');
  const declared = await post(b, big);
  assert.is(declared.status, 413);
  assert.is(declared.body.error.code, 'payload_too_large');
  const chunk = Buffer.alloc(256 * 1024, 'a');
  const streamed = await rawRequest(
    `${b.url}/api/v3/credentials`,
    'POST',
    [
      ['Authorization', `Bearer ${b.secret}`],
      ['Content-Type', 'application/json'],
      ['Idempotency-Key', newKey()],
      ['Transfer-Encoding', 'chunked'],
    ],
    [chunk, chunk, chunk, chunk, chunk],
  );
  assert.is(streamed.status, 413);
  assert.is(streamed.body.error.code, 'payload_too_large');
});

t('an empty JSON body is a validation error, not a media type error', async ({ b }) => {
  const res = await post(b, '');
  assert.is(res.status, 422);
  assert.is(res.body.error.code, 'validation_failed');
  const charset = await post(b, JSON.stringify({ name: 'x', permissions: ['users.read'] }), {
    'content-type': 'application/json; charset=utf-8',
  });
  assert.is(charset.status, 201);
});

t('413 reaches a client that is still uploading, without a connection reset', async ({ b }) => {
  const u = new URL(`${b.url}/api/v3/credentials`);
  const result = await new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = http.request({
      host: u.hostname,
      port: u.port,
      path: u.pathname,
      method: 'POST',
      headers: {
        authorization: `Bearer ${b.secret}`,
        'content-type': 'application/json',
        'idempotency-key': newKey(),
        'transfer-encoding': 'chunked',
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    const chunk = Buffer.alloc(256 * 1024, 'a');
    let sent = 0;
    const tick = () => {
      if (sent++ === 8) return void req.end();
      req.write(chunk);
      setTimeout(tick, 20);
    };
    tick();
  });
  assert.is(result.status, 413);
  assert.is(result.body.error.code, 'payload_too_large');
});

t('400 malformed_json, json_too_deep, invalid_utf8', async ({ b }) => {
  const malformed = await post(b, '{"name": "x",');
  assert.is(malformed.status, 400);
  assert.is(malformed.body.error.code, 'malformed_json');

  const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
  const tooDeep = await post(b, deep(17));
  assert.is(tooDeep.status, 400);
  assert.is(tooDeep.body.error.code, 'json_too_deep');
  // 16 levels is allowed: it reaches validation instead.
  const sixteen = await post(b, deep(16));
  assert.is(sixteen.body.error.code, 'unknown_field');

  const badUtf8 = await post(
    b,
    Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
  );
  assert.is(badUtf8.status, 400);
  assert.is(badUtf8.body.error.code, 'invalid_utf8');
});

t('422 unknown_field and validation_failed itemize fields', async ({ b }) => {
  const unknown = await b.api('POST', '/api/v3/credentials', {
    key: newKey(),
    body: { name: 'x', permissions: ['users.read'], colour: 'red' },
  });
  assert.is(unknown.status, 422);
  assert.is(unknown.body.error.code, 'unknown_field');
  assert.equal(
    unknown.body.error.details.map((d: any) => [d.field, d.code]),
    [['colour', 'unknown_field']],
  );

  const invalid = await b.api('POST', '/api/v3/credentials', {
    key: newKey(),
    body: { name: '', permissions: ['not a permission'], auth_mode: 'sometimes' },
  });
  assert.is(invalid.status, 422);
  assert.is(invalid.body.error.code, 'validation_failed');
  const fields = invalid.body.error.details.map((d: any) => `${d.field}:${d.code}`).sort();
  assert.equal(fields, [
    'auth_mode:invalid_value',
    'name:too_short',
    'permissions.0:invalid_format',
  ]);
  for (const d of invalid.body.error.details) assert.type(d.message, 'string');

  const missing = await b.api('POST', '/api/v3/credentials', { key: newKey(), body: {} });
  assert.equal(missing.body.error.details.map((d: any) => `${d.field}:${d.code}`).sort(), [
    'name:required',
    'permissions:required',
  ]);
});

t('an operation without a body accepts {} and refuses anything else', async ({ b }) => {
  const target = await b.app.services.accounts.createRootCredential({
    accountId: b.accountId,
    permissions: ['users.read'],
  });
  const path = `/api/v3/credentials/${target.id}/revocations`;
  const extra = await b.api('POST', path, { key: newKey(), body: { reason: 'x' } });
  assert.is(extra.status, 422);
  assert.is(extra.body.error.code, 'unknown_field');
  assert.is(extra.body.error.details[0].field, 'reason');
  const empty = await b.api('POST', path, { key: newKey(), body: {} });
  assert.is(empty.status, 200);
  assert.is(empty.body.data.status, 'revoked');
});

t('400 unknown_parameter; 422 for a parameter out of range', async ({ b }) => {
  const unknown = await b.api('GET', '/api/v3/credentials?colour=red');
  assert.is(unknown.status, 400);
  assert.is(unknown.body.error.code, 'unknown_parameter');
  assert.is(unknown.body.error.details[0].parameter, 'colour');
  const range = await b.api('GET', '/api/v3/credentials?limit=500');
  assert.is(range.status, 422);
  assert.is(range.body.error.code, 'validation_failed');
  assert.equal(
    [range.body.error.details[0].parameter, range.body.error.details[0].code],
    ['limit', 'too_large'],
  );
});

t(
  '405 with Allow; a path outside the contract is 404 with the nearest operation',
  async ({ b }) => {
    const res = await b.api('DELETE', '/api/v3/capabilities');
    assert.is(res.status, 405);
    assert.is(res.body.error.code, 'method_not_allowed');
    assert.is(res.headers.get('allow'), 'GET');
    const unknown = await b.api('GET', '/api/v3/no-such-thing');
    assert.is(unknown.status, 404);
    assert.is(unknown.body.error.code, 'not_found');
    assert.equal(unknown.body.error.details, [
      {
        code: 'unknown_route',
        message: 'No operation has this path; every operation is listed in /openapi.json.',
      },
    ]);
    const typos: [string, string, string][] = [
      ['GET', '/api/v3/user/12', 'GET /api/v3/users/{user_id}'],
      ['GET', '/api/v3/usres', 'GET /api/v3/users'],
      ['POST', '/api/v3/user', 'POST /api/v3/users'],
      ['GET', '/api/v3/users/12/enrollment', 'GET /api/v3/users/{user_id}/enrollments'],
      ['GET', '/api/v3/operation/9/items', 'GET /api/v3/operations/{operation_id}/items'],
    ];
    for (const [method, path, meant] of typos) {
      const typo = await b.api(method, path, method === 'POST' ? { body: {} } : {});
      assert.is(typo.status, 404, path);
      assert.is(
        typo.body.error.details[0].message,
        `No operation has this path. Did you mean ${meant}?`,
        path,
      );
    }
  },
);

t('messages are localized; codes never change', async ({ b }) => {
  const messages = new Set<string>();
  for (const lang of ['en-US', 'pt-BR', 'es-ES', 'fr-FR']) {
    const res = await b.api('GET', '/api/v3/no-such-thing', {
      headers: { 'accept-language': lang },
    });
    assert.is(res.body.error.code, 'not_found');
    messages.add(res.body.error.message);
  }
  assert.is(messages.size, 4);
  const fallback = await b.api('GET', '/api/v3/no-such-thing', {
    headers: { 'accept-language': 'de-DE' },
  });
  const english = await b.api('GET', '/api/v3/no-such-thing');
  assert.is(fallback.body.error.message, english.body.error.message);
});

t('500 internal_error carries no detail', async ({ b }) => {
  const credentials = b.app.services.credentials;
  const original = credentials.revoke;
  credentials.revoke = async () => {
    throw new Error('secret internals: connection string postgres://x');
  };
  try {
    const res = await b.api('POST', `/api/v3/credentials/${b.credentialId}/revocations`, {
      key: newKey(),
    });
    assert.is(res.status, 500);
    assert.is(res.body.error.code, 'internal_error');
    assert.equal(res.body.error.details, []);
    assert.not.match(res.text, /postgres|internals/);
  } finally {
    credentials.revoke = original;
  }
});

t.run();
