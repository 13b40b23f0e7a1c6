// engine: any
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { diffContracts } from '../../src/contract/diff.ts';

// ------------------------------------------------------------ builders for tiny contracts

type Obj = Record<string, unknown>;

function contract(paths: Obj, components: Obj = {}, version = '3.0.0'): Obj {
  return { openapi: '3.1.0', info: { title: 'test', version }, paths, components };
}

/** GET /users answering 200 with `schema`. */
function getUsers(schema: Obj, extra: Obj = {}): Obj {
  return {
    '/users': {
      get: {
        operationId: 'listUsers',
        responses: { '200': { description: 'ok', content: { 'application/json': { schema } } } },
        ...extra,
      },
    },
  };
}

/** POST /users taking `schema` as body. */
function postUsers(schema: Obj): Obj {
  return {
    '/users': {
      post: {
        operationId: 'createUser',
        requestBody: { required: true, content: { 'application/json': { schema } } },
        responses: { '201': { description: 'created' } },
      },
    },
  };
}

/** GET /users with the given parameters and a bare 200. */
function withParams(...parameters: Obj[]): Obj {
  return {
    '/users': {
      get: { operationId: 'listUsers', parameters, responses: { '200': { description: 'ok' } } },
    },
  };
}

const object = (properties: Obj, required: string[] = []): Obj => ({
  type: 'object',
  properties,
  ...(required.length ? { required } : {}),
});

/** Changes rendered the way the CLI prints them, so assertions read like the output. */
function diff(a: Obj, b: Obj): string[] {
  return diffContracts(a, b).changes.map((c) => `${c.kind} ${c.where}: ${c.what}`);
}

const name = { type: 'string' };

// ------------------------------------------------------------ basics

test('identical contracts have no changes', () => {
  const doc = contract(getUsers(object({ id: name })));
  const result = diffContracts(doc, structuredClone(doc));
  assert.equal(result, { changes: [], breaking: false, sameMajor: true });
});

test('text-only changes (summary, description, example) are not listed', () => {
  const a = contract(
    getUsers({ ...object({ id: name }), description: 'old', example: { id: 'a' } }),
  );
  const b = contract(
    getUsers(
      { ...object({ id: { ...name, description: 'new' } }), example: { id: 'b' } },
      {
        summary: 'List users',
        description: 'Now documented',
      },
    ),
  );
  assert.equal(diff(a, b), []);
});

test('sameMajor compares the major of info.version', () => {
  const doc = (v: string) => contract({}, {}, v);
  assert.is(diffContracts(doc('3.1.0'), doc('3.4.2')).sameMajor, true);
  assert.is(diffContracts(doc('3.9.0'), doc('4.0.0')).sameMajor, false);
});

test('input that is not an object is rejected', () => {
  assert.throws(() => diffContracts('nope', {}), /must be objects/);
});

// ------------------------------------------------------------ operations

test('new operation is compatible', () => {
  const b = contract({ '/users': { ...getUsers(name)['/users']!, ...postUsers(name)['/users']! } });
  assert.equal(diff(contract(getUsers(name)), b), [
    'compatible POST /users: new operation createUser',
  ]);
});

test('removed operation is breaking', () => {
  const a = contract({ '/users': { ...getUsers(name)['/users']!, ...postUsers(name)['/users']! } });
  assert.equal(diff(a, contract(getUsers(name))), [
    'breaking POST /users: operation removed (operationId createUser)',
  ]);
});

test('renamed operationId is breaking', () => {
  const b = contract(getUsers(name, { operationId: 'findUsers' }));
  const result = diffContracts(contract(getUsers(name)), b);
  assert.equal(result.changes, [
    { kind: 'breaking', where: 'operation listUsers', what: 'operationId renamed to "findUsers"' },
  ]);
  assert.is(result.breaking, true);
});

test('operation moved to another path is breaking', () => {
  const a = contract(getUsers(name));
  const b = contract({ '/people': getUsers(name)['/users'] });
  assert.equal(diff(a, b), [
    'breaking GET /users: operation listUsers moved to GET /people; the old path/method no longer exists',
    'compatible GET /people: new operation listUsers',
  ]);
});

// ------------------------------------------------------------ request bodies

test('new optional request field is compatible, new required one is breaking', () => {
  const a = contract(postUsers(object({ name }, ['name'])));
  const b = contract(postUsers(object({ name, nick: name, email: name }, ['name', 'email'])));
  assert.equal(diff(a, b), [
    'compatible POST /users request body.nick: new optional request field',
    'breaking POST /users request body.email: new required request field',
  ]);
});

test('optional request field becoming required is breaking; the reverse is compatible', () => {
  const a = contract(postUsers(object({ name, nick: name }, ['name'])));
  const b = contract(postUsers(object({ name, nick: name }, ['nick'])));
  assert.equal(diff(a, b), [
    'compatible POST /users request body.name: field no longer required',
    'breaking POST /users request body.nick: optional field became required',
  ]);
});

test('removed request field is breaking', () => {
  const a = contract(postUsers(object({ name, nick: name })));
  assert.equal(diff(a, contract(postUsers(object({ name })))), [
    'breaking POST /users request body.nick: request field removed',
  ]);
});

test('request limits: raising is compatible, lowering is breaking', () => {
  const a = contract(postUsers(object({ name: { type: 'string', maxLength: 50, minLength: 1 } })));
  const raised = contract(postUsers(object({ name: { type: 'string', maxLength: 80 } })));
  const lowered = contract(
    postUsers(object({ name: { type: 'string', maxLength: 20, minLength: 3 } })),
  );
  assert.equal(diff(a, raised), [
    'compatible POST /users request body.name: maxLength raised from 50 to 80',
    'compatible POST /users request body.name: minLength 1 removed',
  ]);
  assert.equal(diff(a, lowered), [
    'breaking POST /users request body.name: maxLength lowered from 50 to 20',
    'breaking POST /users request body.name: minLength raised from 1 to 3',
  ]);
});

test('request array limits: maxItems lowered and minItems raised are breaking', () => {
  const tags = (maxItems: number, minItems: number) =>
    contract(postUsers(object({ tags: { type: 'array', items: name, maxItems, minItems } })));
  assert.equal(diff(tags(10, 0), tags(5, 1)), [
    'breaking POST /users request body.tags: maxItems lowered from 10 to 5',
    'breaking POST /users request body.tags: minItems raised from 0 to 1',
  ]);
  assert.equal(diff(tags(5, 1), tags(10, 0)).length, 2);
  assert.ok(diff(tags(5, 1), tags(10, 0)).every((line) => line.startsWith('compatible')));
});

test('pattern removed is compatible, added is breaking', () => {
  const a = contract(postUsers(object({ code: { type: 'string', pattern: '^[A-Z]+$' } })));
  const b = contract(postUsers(object({ code: { type: 'string' } })));
  assert.equal(diff(a, b), [
    'compatible POST /users request body.code: pattern "^[A-Z]+$" removed',
  ]);
  assert.equal(diff(b, a), [
    'breaking POST /users request body.code: pattern changed from none to "^[A-Z]+$"',
  ]);
});

test('limits on response fields are not judged as validation', () => {
  const a = contract(getUsers(object({ name: { type: 'string', maxLength: 50 } })));
  const b = contract(getUsers(object({ name: { type: 'string', maxLength: 10 } })));
  assert.equal(diff(a, b), []);
});

// ------------------------------------------------------------ parameters

test('new optional query and header parameters are compatible', () => {
  const b = contract(
    withParams(
      { name: 'q', in: 'query', schema: name },
      { name: 'X-Trace', in: 'header', schema: name },
    ),
  );
  assert.equal(diff(contract(withParams()), b), [
    'compatible GET /users query.q: new optional parameter',
    'compatible GET /users header.x-trace: new optional parameter',
  ]);
});

test('new required parameter is breaking', () => {
  const b = contract(withParams({ name: 'tenant', in: 'query', required: true, schema: name }));
  assert.equal(diff(contract(withParams()), b), [
    'breaking GET /users query.tenant: new required parameter',
  ]);
});

test('removed parameter is breaking', () => {
  const a = contract(withParams({ name: 'q', in: 'query', schema: name }));
  assert.equal(diff(a, contract(withParams())), ['breaking GET /users query.q: parameter removed']);
});

test('optional parameter becoming required is breaking', () => {
  const a = contract(withParams({ name: 'q', in: 'query', schema: name }));
  const b = contract(withParams({ name: 'q', in: 'query', required: true, schema: name }));
  assert.equal(diff(a, b), ['breaking GET /users query.q: optional parameter became required']);
  assert.equal(diff(b, a), ['compatible GET /users query.q: parameter no longer required']);
});

test('parameter maximum lowered is breaking, raised is compatible', () => {
  const limit = (maximum: number) =>
    contract(withParams({ name: 'limit', in: 'query', schema: { type: 'integer', maximum } }));
  assert.equal(diff(limit(100), limit(50)), [
    'breaking GET /users query.limit: maximum lowered from 100 to 50',
  ]);
  assert.equal(diff(limit(50), limit(100)), [
    'compatible GET /users query.limit: maximum raised from 50 to 100',
  ]);
});

test('parameter minimum raised is breaking', () => {
  const page = (minimum: number) =>
    contract(withParams({ name: 'page', in: 'query', schema: { type: 'integer', minimum } }));
  assert.equal(diff(page(0), page(1)), [
    'breaking GET /users query.page: minimum raised from 0 to 1',
  ]);
});

test('changing the default of the sort parameter is breaking', () => {
  const sort = (dflt: string) =>
    contract(withParams({ name: 'sort', in: 'query', schema: { type: 'string', default: dflt } }));
  assert.equal(diff(sort('name'), sort('-createdAt')), [
    'breaking GET /users query.sort: default list ordering changed from "name" to "-createdAt"',
  ]);
});

test('path-level parameters are merged into each operation', () => {
  const a = contract({
    '/users/{id}': {
      parameters: [{ name: 'id', in: 'path', required: true, schema: name }],
      get: { operationId: 'getUser', responses: { '200': { description: 'ok' } } },
    },
  });
  const b = structuredClone(a) as { paths: Record<string, Obj> };
  b.paths['/users/{id}']!.parameters = [
    { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
  ];
  assert.equal(diff(a, b), [
    'breaking GET /users/{id} path.id: type changed from string to integer',
  ]);
});

// ------------------------------------------------------------ responses

test('new response field is compatible, removed one is breaking', () => {
  const a = contract(getUsers(object({ id: name, email: name })));
  const b = contract(getUsers(object({ id: name, avatar: name })));
  assert.equal(diff(a, b), [
    'breaking GET /users response 200 body.email: response field removed',
    'compatible GET /users response 200 body.avatar: new response field',
  ]);
});

test('type and format changes are breaking and found in nested arrays', () => {
  const page = (email: Obj, id: Obj) =>
    contract(getUsers(object({ data: { type: 'array', items: object({ id, email }) } })));
  const a = page({ type: 'string', format: 'email' }, { type: 'string' });
  const b = page({ type: 'string', format: 'uri' }, { type: 'integer' });
  assert.equal(diff(a, b), [
    'breaking GET /users response 200 body.data[].id: type changed from string to integer',
    'breaking GET /users response 200 body.data[].email: format changed from "email" to "uri"',
  ]);
});

test('response field leaving `required` is breaking', () => {
  const a = contract(getUsers(object({ id: name }, ['id'])));
  const b = contract(getUsers(object({ id: name })));
  assert.equal(diff(a, b), [
    'breaking GET /users response 200 body.id: field no longer always present (removed from required)',
  ]);
});

test('nullability: breaking in responses, compatible in requests', () => {
  const nullable = { type: ['string', 'null'] };
  assert.equal(
    diff(
      contract(getUsers(object({ nick: name }))),
      contract(getUsers(object({ nick: nullable }))),
    ),
    ['breaking GET /users response 200 body.nick: may now be null'],
  );
  assert.equal(
    diff(
      contract(postUsers(object({ nick: name }))),
      contract(postUsers(object({ nick: nullable }))),
    ),
    ['compatible POST /users request body.nick: now accepts null'],
  );
});

test('new error status is compatible; removed or replaced success status is breaking', () => {
  const op = (responses: Obj) =>
    contract({ '/users': { get: { operationId: 'listUsers', responses } } });
  const ok = { description: 'ok' };
  assert.equal(diff(op({ '200': ok }), op({ '200': ok, '429': ok, '503': ok })), [
    'compatible GET /users response 429: new error response 429',
    'compatible GET /users response 503: new error response 503',
  ]);
  assert.equal(diff(op({ '200': ok, '404': ok }), op({ '202': ok, '404': ok })), [
    'breaking GET /users response 200: documented response status 200 removed',
    'breaking GET /users response 202: new non-error status 202; clients only know 200, 404',
  ]);
  assert.equal(diff(op({ '200': ok, '404': ok }), op({ '200': ok })), [
    'breaking GET /users response 404: documented response status 404 removed',
  ]);
});

test('declaring the statuses `default` covered, as shared responses, is not breaking', () => {
  const envelope = { content: { 'application/json': { schema: { type: 'object' } } } };
  const shared = (description: string) => ({ description, ...envelope });
  const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });
  const op = (responses: Obj, description: string) => ({
    openapi: '3.1.0',
    info: { title: 'test', version: '3.0.0' },
    paths: { '/users': { post: { operationId: 'createUser', responses } } },
    components: {
      responses: {
        Error: shared(description),
        BadRequest: shared('bad'),
        UnsupportedMediaType: shared('media'),
        Unprocessable: shared('body'),
        TooManyRequests: { ...shared('slow down'), headers: { 'Retry-After': { schema: {} } } },
      },
    },
  });
  const ok = { description: 'ok' };
  const before = op({ '201': ok, default: ref('Error') }, 'Any other error.');
  const after = op(
    {
      '201': ok,
      '400': ref('BadRequest'),
      '415': ref('UnsupportedMediaType'),
      '422': ref('Unprocessable'),
      '429': ref('TooManyRequests'),
      default: ref('Error'),
    },
    'An unexpected failure (500).',
  );
  const result = diffContracts(before, after);
  assert.is(result.breaking, false);
  assert.equal(diff(before, after), [
    'compatible POST /users response 400: new error response 400',
    'compatible POST /users response 415: new error response 415',
    'compatible POST /users response 422: new error response 422',
    'compatible POST /users response 429: new error response 429',
  ]);
});

test('response headers: new is compatible, removed is breaking', () => {
  const op = (headers: Obj) =>
    contract({
      '/users': {
        get: { responses: { '200': { description: 'ok', headers } } },
      },
    });
  const header = { schema: { type: 'integer' } };
  assert.equal(diff(op({}), op({ 'X-Total': header })), [
    'compatible GET /users response 200 header x-total: new response header',
  ]);
  assert.equal(diff(op({ 'X-Total': header }), op({})), [
    'breaking GET /users response 200 header x-total: response header removed',
  ]);
});

// ------------------------------------------------------------ enums

const statusEnum = (values: string[], marker?: boolean): Obj => ({
  type: 'string',
  enum: values,
  ...(marker === undefined ? {} : { 'x-extensible': marker }),
});

test('enum marked x-extensible: true accepts new values compatibly', () => {
  const a = contract(getUsers(object({ status: statusEnum(['a'], true) })));
  const b = contract(getUsers(object({ status: statusEnum(['a', 'b'], true) })));
  assert.equal(diff(a, b), [
    'compatible GET /users response 200 body.status: enum value "b" added (enum is marked x-extensible: true)',
  ]);
});

test('adding to an enum marked x-extensible: false is breaking, even in a request', () => {
  const a = contract(postUsers(object({ status: statusEnum(['a'], false) })));
  const b = contract(postUsers(object({ status: statusEnum(['a', 'b'], false) })));
  assert.equal(diff(a, b), [
    'breaking POST /users request body.status: enum value "b" added (enum is marked x-extensible: false)',
  ]);
});

test('unmarked enum: closed in responses, open in requests, and says so', () => {
  const get = (values: string[]) => contract(getUsers(object({ status: statusEnum(values) })));
  const post = (values: string[]) => contract(postUsers(object({ status: statusEnum(values) })));
  const [response] = diffContracts(get(['a']), get(['a', 'b'])).changes;
  assert.is(response!.kind, 'breaking');
  assert.match(response!.what, /unmarked/);
  const [request] = diffContracts(post(['a']), post(['a', 'b'])).changes;
  assert.is(request!.kind, 'compatible');
  assert.match(request!.what, /unmarked/);
});

test('removing an enum value is breaking even when extensible', () => {
  const a = contract(getUsers(object({ status: statusEnum(['a', 'b'], true) })));
  const b = contract(getUsers(object({ status: statusEnum(['a'], true) })));
  assert.equal(diff(a, b), [
    'breaking GET /users response 200 body.status: enum value "b" removed',
  ]);
});

test('x-extensible true -> false is breaking, false -> true is compatible', () => {
  const doc = (marker: boolean) =>
    contract(getUsers(object({ status: statusEnum(['a'], marker) })));
  assert.equal(diff(doc(true), doc(false)), [
    'breaking GET /users response 200 body.status: x-extensible changed from true to false',
  ]);
  assert.equal(diff(doc(false), doc(true)), [
    'compatible GET /users response 200 body.status: x-extensible changed from false to true',
  ]);
});

// ------------------------------------------------------------ $ref, allOf, cycles

test('changes inside a referenced component are found through $ref', () => {
  const ref = { $ref: '#/components/schemas/User' };
  const a = contract(getUsers(ref), { schemas: { User: object({ id: name, email: name }) } });
  const b = contract(getUsers(ref), { schemas: { User: object({ id: name }) } });
  assert.equal(diff(a, b), ['breaking GET /users response 200 body.email: response field removed']);
});

test('referenced parameters and responses are resolved', () => {
  const paths = {
    '/users': {
      get: {
        parameters: [{ $ref: '#/components/parameters/Limit' }],
        responses: { '404': { $ref: '#/components/responses/NotFound' } },
      },
    },
  };
  const components = (maximum: number, code: Obj) => ({
    parameters: { Limit: { name: 'limit', in: 'query', schema: { type: 'integer', maximum } } },
    responses: {
      NotFound: { description: 'x', content: { 'application/json': { schema: object({ code }) } } },
    },
  });
  const a = contract(paths, components(100, name));
  const b = contract(paths, components(10, { type: 'integer' }));
  assert.equal(diff(a, b), [
    'breaking GET /users query.limit: maximum lowered from 100 to 10',
    'breaking GET /users response 404 body.code: type changed from string to integer',
  ]);
});

test('recursive schemas terminate and still report changes', () => {
  const node = (extra: Obj) => ({
    schemas: {
      Node: object({
        name,
        children: { type: 'array', items: { $ref: '#/components/schemas/Node' } },
        ...extra,
      }),
    },
  });
  const ref = { $ref: '#/components/schemas/Node' };
  const a = contract(getUsers(ref), node({}));
  const b = contract(getUsers(ref), node({ size: { type: 'integer' } }));
  assert.equal(diff(a, structuredClone(a)), []);
  assert.equal(diff(a, b), ['compatible GET /users response 200 body.size: new response field']);
});

test('allOf merges properties and required from all members', () => {
  const base = { $ref: '#/components/schemas/Base' };
  const schemas = { Base: object({ id: name }, ['id']) };
  const a = contract(postUsers({ allOf: [base, object({ name })] }), { schemas });
  const b = contract(postUsers({ allOf: [base, object({ name, email: name }, ['email'])] }), {
    schemas,
  });
  assert.equal(diff(a, b), ['breaking POST /users request body.email: new required request field']);
  // Moving a property between members is not a change.
  const moved = contract(postUsers({ allOf: [object({ id: name, name }, ['id'])] }));
  assert.equal(diff(a, moved), []);
});

test('oneOf [X, null] is read as nullable X', () => {
  const ref = { $ref: '#/components/schemas/Name' };
  const schemas = { Name: name };
  const a = contract(getUsers(object({ nick: ref })), { schemas });
  const b = contract(getUsers(object({ nick: { oneOf: [ref, { type: 'null' }] } })), { schemas });
  assert.equal(diff(a, b), ['breaking GET /users response 200 body.nick: may now be null']);
});

test('an unresolvable $ref is an error, not a silent skip', () => {
  const a = contract(getUsers({ $ref: '#/components/schemas/Missing' }));
  assert.throws(() => diffContracts(a, a), /unresolvable \$ref "#\/components\/schemas\/Missing"/);
});

// ------------------------------------------------------------ CLI exit codes

const dir = mkdtempSync(join(tmpdir(), 'contract-diff-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
// Run from the repo root, whatever directory the tests start in.
const root = fileURLToPath(new URL('../..', import.meta.url));
const script = join(root, 'scripts/contract-diff.ts');
function cli(...docs: Obj[]) {
  const files = docs.map((doc, i) => {
    const file = join(dir, `${i}-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, stringify(doc));
    return file;
  });
  const run = spawnSync(process.execPath, [script, ...files], {
    encoding: 'utf8',
    cwd: root,
  });
  return { code: run.status, out: run.stdout, err: run.stderr };
}

test('CLI exits 1 on a breaking change within the same major', () => {
  const a = contract(getUsers(object({ id: name, email: name })), {}, '3.1.0');
  const b = contract(getUsers(object({ id: name, avatar: name })), {}, '3.2.0');
  const { code, out } = cli(a, b);
  assert.is(code, 1);
  assert.is(
    out,
    [
      'BREAKING  GET /users response 200 body.email: response field removed',
      'compatible  GET /users response 200 body.avatar: new response field',
      '2 changes: 1 breaking, 1 compatible',
      '',
    ].join('\n'),
  );
});

test('CLI exits 0 on breaking changes across majors and on no changes', () => {
  const a = contract(getUsers(object({ email: name })), {}, '3.1.0');
  const b = contract(getUsers(object({})), {}, '4.0.0');
  assert.is(cli(a, b).code, 0);
  const same = cli(a, a);
  assert.is(same.code, 0);
  assert.is(same.out, 'no changes\n');
});

test('CLI exits 2 on usage, IO and parse errors', () => {
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [script, ...args], {
      cwd: root,
      encoding: 'utf8',
    });
  assert.is(run().status, 2);
  assert.match(run().stderr, /usage:/);
  const missing = run(join(dir, 'missing.yaml'), join(dir, 'missing.yaml'));
  assert.is(missing.status, 2);
  assert.match(missing.stderr, /cannot read/);
  const broken = join(dir, 'broken.yaml');
  writeFileSync(broken, 'openapi: [unclosed');
  assert.is(run(broken, broken).status, 2);
  assert.match(run(broken, broken).stderr, /cannot parse/);
});

test.run();
