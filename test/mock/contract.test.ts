// engine: any
// The mock on the working contract (spec/openapi.yaml), in process: every v3 operation answers
// its success status with a body the test suite's contract checker accepts, and requests are
// refused as the real server refuses them.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSpec } from '../../src/app.ts';
import { createMock } from '../../src/mock/server.ts';
import { forMocking, inlineRefs } from '../../src/mock/document.ts';
import { ContractChecker } from '../helpers/contract.ts';

const SECRET = 'sch_test_mock';
const spec = loadSpec();
const checker = new ContractChecker(spec);

type Mock = Awaited<ReturnType<typeof createMock>>;
const t = suite<{ mock: Mock; url: string }>('mock server: the v3 contract');
t.before(async (ctx) => {
  ctx.mock = await createMock(spec);
  ctx.url = `http://127.0.0.1:${await ctx.mock.listen(0)}`;
});
t.after(async ({ mock }) => mock.close());

/** A request body the contract accepts: its example, else the required fields' examples. */
function sample(schema: any): unknown {
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined) return schema.default;
  if (schema.enum) return schema.enum[0];
  if (schema.type === 'object' || schema.properties) {
    const out: Record<string, unknown> = {};
    for (const name of schema.required ?? []) out[name] = sample(schema.properties[name]);
    // A body of optional fields that needs some (minProperties: a PATCH): the first ones.
    for (const name of Object.keys(schema.properties ?? {})) {
      if (Object.keys(out).length >= (schema.minProperties ?? 0)) break;
      out[name] ??= sample(schema.properties[name]);
    }
    return out;
  }
  if (schema.type === 'boolean') return true;
  if (schema.type === 'integer' || schema.type === 'number') return schema.minimum ?? 1;
  if (schema.type === 'array') return [sample(schema.items)];
  return 'x'.repeat(schema.minLength ?? 1);
}

async function call(url: string, method: string, path: string, body?: unknown, headers = {}) {
  const res = await fetch(url + path, {
    method,
    headers: {
      authorization: `Bearer ${SECRET}`,
      ...(method === 'POST' ? { 'idempotency-key': `k-${Math.random()}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const type = res.headers.get('content-type');
  const parsed = text && type === 'application/json' ? JSON.parse(text) : text || undefined;
  checker.check(method, path, res.status, type, parsed); // throws on anything off-contract
  return { status: res.status, type, body: parsed, headers: res.headers };
}

t('every operation answers its first success status, on the contract', async ({ url, mock }) => {
  const doc: any = forMocking(inlineRefs(spec));
  const served: string[] = [];
  for (const [template, item] of Object.entries<any>(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const status = Number(
        Object.keys(op.responses)
          .filter((s) => /^2/.test(s))
          .sort()[0],
      );
      const media = Object.keys(op.responses[status].content ?? {})[0];
      const path = '/api/v3' + template.replace(/\{[^}]+\}/g, '1');
      const body = op.requestBody
        ? sample(op.requestBody.content['application/json'].schema)
        : undefined;
      const where = `${op.operationId} ${method.toUpperCase()} ${path}`;
      if (media && media !== 'application/json') {
        // A stream of events: its example, as the declared media type (the checker reads JSON).
        const res = await fetch(url + path, { headers: { authorization: `Bearer ${SECRET}` } });
        assert.is(res.status, status, where);
        assert.is(res.headers.get('content-type'), media, where);
        assert.is(await res.text(), op.responses[status].content[media].example, where);
      } else {
        const res = await call(url, method.toUpperCase(), path, body);
        assert.is(res.status, status, `${where}: ${JSON.stringify(res.body)}`);
        if (media) assert.type(res.body, 'object', where);
        else assert.is(res.body, undefined, where);
      }
      served.push(op.operationId);
    }
  }
  assert.is(served.length, mock.operations);
  for (const id of [
    'getCapabilities',
    'listUsers',
    'createUser',
    'deleteTag',
    'createBatchOperation',
  ]) {
    assert.ok(served.includes(id), id);
  }
});

t('bodies come from the contract: examples of the schemas, and constants', async ({ url }) => {
  const created = await call(url, 'POST', '/api/v3/users', {
    name: 'Ana',
    email: 'ana@example.com',
  });
  assert.is(created.status, 201);
  assert.is(created.body.data.object, 'user');
  assert.is(created.body.data.id, '42'); // the Id schema's example
  assert.is(created.body.data.email, 'ana@example.com');
  const caps = await call(url, 'GET', '/api/v3/capabilities');
  assert.equal(caps.body.data.object, 'capabilities');
  assert.is(caps.headers.get('x-service-release'), spec.info.version);
});

t(
  'refused like the real server: codes, statuses, details, the caller language',
  async ({ url }) => {
    const unknown = await call(url, 'POST', '/api/v3/users', {
      name: 'Ana',
      email: 'ana@example.com',
      nick: 'a',
    });
    assert.is(unknown.status, 422);
    assert.equal(unknown.body.error.details, [
      { code: 'unknown_field', message: 'This field is not allowed.', field: 'nick' },
    ]);
    assert.is(unknown.body.error.code, 'unknown_field');
    assert.is(unknown.body.error.request_id, unknown.headers.get('x-request-id'));

    const invalid = await call(
      url,
      'POST',
      '/api/v3/users',
      { name: 'Ana', email: 'ana at example' },
      {
        'accept-language': 'pt-BR',
      },
    );
    assert.is(invalid.status, 422);
    assert.is(invalid.body.error.code, 'validation_failed');
    assert.equal(
      invalid.body.error.details.map((d: any) => [d.field, d.code]),
      [['email', 'invalid_email']],
    );
    assert.is.not(invalid.body.error.message, unknown.body.error.message); // Portuguese

    const param = await call(url, 'GET', '/api/v3/users?limit=500');
    assert.equal(
      [param.status, param.body.error.code, param.body.error.details[0].parameter],
      [422, 'validation_failed', 'limit'],
    );
    const extra = await call(url, 'GET', '/api/v3/users?colour=red');
    assert.equal([extra.status, extra.body.error.code], [400, 'unknown_parameter']);
    const missing = await call(url, 'GET', '/api/v3/users/not-an-id');
    assert.equal([missing.status, missing.body.error.code], [404, 'not_found']);
    const method = await call(url, 'PUT', '/api/v3/users/1');
    assert.equal([method.status, method.body.error.code], [405, 'method_not_allowed']);
    assert.is(method.headers.get('allow'), 'GET, PATCH, DELETE');
    const noKey = await call(
      url,
      'POST',
      '/api/v3/tags',
      { name: 'vip' },
      { 'idempotency-key': '' },
    );
    assert.equal([noKey.status, noKey.body.error.code], [422, 'idempotency_key_invalid']);
    const anonymous = await call(url, 'GET', '/api/v3/users', undefined, { authorization: '' });
    assert.equal([anonymous.status, anonymous.body.error.code], [401, 'unauthenticated']);
    const noBody = await call(url, 'DELETE', '/api/v3/tags/1', { a: 1 });
    assert.equal([noBody.status, noBody.body.error.code], [422, 'unknown_field']);
  },
);

t.run();
