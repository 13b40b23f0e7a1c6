// engine: any
// `npm run mock -- --spec FILE --port 0` as a process, on a fixture contract whose operations
// have no handler anywhere in the code base: they are served from the document alone.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { stringify } from 'yaml';
import { FIXTURE } from './widgets.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SECRET = 'sch_test_fixture';

interface Mock {
  proc: ChildProcess;
  url: string;
  started: any;
  dir: string;
}

const t = suite<{ m: Mock }>('mock server: a fixture contract, as a process');

t.before(async (ctx) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-mock-'));
  const file = path.join(dir, 'widgets.yaml');
  fs.writeFileSync(file, stringify(FIXTURE));
  const proc = spawn(process.execPath, ['scripts/mock.ts', '--spec', file, '--port', '0'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const line = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: proc.stdout! }).once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`mock exited ${code}: ${stderr}`)));
  });
  const started = JSON.parse(line);
  ctx.m = { proc, url: started.url, started, dir };
});

t.after(async ({ m }) => {
  const exited = new Promise((resolve) => m.proc.once('exit', resolve));
  m.proc.kill('SIGTERM');
  assert.is(await exited, 0);
  fs.rmSync(m.dir, { recursive: true, force: true });
});

async function call(
  m: Mock,
  method: string,
  p: string,
  init: { body?: unknown; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { authorization: `Bearer ${SECRET}`, ...init.headers };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(m.url + p, {
    method,
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    body: text ? JSON.parse(text) : undefined,
  };
}

t('starts on the port it was given and says where, with the fixture release', ({ m }) => {
  assert.match(m.url, /^http:\/\/127\.0\.0\.1:\d+\/api\/v3$/);
  assert.equal(
    { ...m.started, url: undefined },
    {
      mock: true,
      url: undefined,
      release: '9.8.7',
      operations: 4,
      spec: path.relative(ROOT, path.join(m.dir, 'widgets.yaml')),
    },
  );
});

t('serves the first named example, another on Prefer: example=', async ({ m }) => {
  const first = await call(m, 'GET', '/widgets');
  assert.is(first.status, 200);
  assert.is(first.headers.get('x-service-release'), '9.8.7');
  assert.match(first.headers.get('x-request-id')!, /^req_[0-9a-f]{24}$/);
  assert.equal(first.body, {
    data: [
      { object: 'widget', id: '1' },
      { object: 'widget', id: '2' },
    ],
  });
  const none = await call(m, 'GET', '/widgets?limit=5', { headers: { prefer: 'example=none' } });
  assert.equal(none.body, { data: [] });
});

t(
  'without examples, generates from the schema: const, examples, limits, nullable',
  async ({ m }) => {
    const res = await call(m, 'GET', '/widgets/3');
    assert.is(res.status, 200);
    assert.equal(res.body, {
      object: 'widget',
      id: '12',
      size: 3,
      note: '1970-01-01T00:00:00.000Z',
      tags: ['new'],
    });
  },
);

t('the success status the operation declares: 201 with its example, 204 empty', async ({ m }) => {
  const created = await call(m, 'POST', '/widgets', {
    body: { name: 'Cog', color: 'red' },
    headers: { 'idempotency-key': 'k-1' },
  });
  assert.is(created.status, 201);
  assert.equal(created.body, { data: { id: '7' } });
  const gone = await call(m, 'DELETE', '/widgets/3');
  assert.is(gone.status, 204);
  assert.is(gone.text, '');
  assert.is(gone.headers.get('content-type'), null);
});

t(
  'Prefer: code= answers a declared error from its example, with this request id',
  async ({ m }) => {
    const res = await call(m, 'GET', '/widgets/3', { headers: { prefer: 'code=404' } });
    assert.is(res.status, 404);
    assert.equal(res.body, {
      error: {
        code: 'not_found',
        message: 'Not here.',
        request_id: res.headers.get('x-request-id'),
        details: [],
      },
    });
  },
);

t('requests are checked against the fixture, errors in the v3 envelope', async ({ m }) => {
  const envelope = (r: Awaited<ReturnType<typeof call>>) => {
    assert.is(r.body.error.request_id, r.headers.get('x-request-id'));
    return { status: r.status, code: r.body.error.code, details: r.body.error.details };
  };
  const key = { 'idempotency-key': 'k-2' };
  assert.equal(
    envelope(await call(m, 'POST', '/widgets', { body: { name: 'Cog', size: 1 }, headers: key })),
    {
      status: 422,
      code: 'unknown_field',
      details: [{ code: 'unknown_field', message: 'This field is not allowed.', field: 'size' }],
    },
  );
  assert.equal(
    envelope(await call(m, 'POST', '/widgets', { body: { color: 'green' }, headers: key })),
    {
      status: 422,
      code: 'validation_failed',
      details: [
        { code: 'required', message: 'This field is required.', field: 'name' },
        { code: 'invalid_value', message: 'Must be one of: red, blue.', field: 'color' },
      ],
    },
  );
  assert.equal(envelope(await call(m, 'POST', '/widgets', { body: { name: 'Cog' } })), {
    status: 422,
    code: 'idempotency_key_required',
    details: [],
  });
  assert.equal(envelope(await call(m, 'GET', '/widgets?limit=0')), {
    status: 422,
    code: 'validation_failed',
    details: [
      { code: 'too_small', message: 'Must be greater than or equal to 1.', parameter: 'limit' },
    ],
  });
  assert.equal(envelope(await call(m, 'GET', '/widgets/abc')), {
    status: 404,
    code: 'not_found',
    details: [],
  });
  const put = await call(m, 'PUT', '/widgets/3');
  assert.equal(envelope(put), { status: 405, code: 'method_not_allowed', details: [] });
  assert.is(put.headers.get('allow'), 'GET, DELETE');
  assert.equal(envelope(await call(m, 'GET', '/gadgets')), {
    status: 404,
    code: 'not_found',
    details: [
      {
        code: 'unknown_route',
        message: 'No operation has this path. Did you mean GET /api/v3/widgets?',
      },
    ],
  });
  const anonymous = await call(m, 'GET', '/widgets', { headers: { authorization: 'Bearer nope' } });
  assert.equal(envelope(anonymous), { status: 401, code: 'unauthenticated', details: [] });
});

t.run();
