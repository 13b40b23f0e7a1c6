// engine: any
// What the mock answers on the working contract, beyond the success examples: `Prefer: code=` a
// status the operation does not declare is an error (never a silent 2xx), every declared error
// status says a code of that status, and lists hold generated items, the same for the same path.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSpec } from '../../src/app.ts';
import { ERROR_STATUS } from '../../src/errors.ts';
import { createMock } from '../../src/mock/server.ts';
import { generatedPage } from '../../src/mock/lists.ts';
import { ContractChecker } from '../helpers/contract.ts';

const SECRET = 'sch_test_mock';
const spec = loadSpec();
const checker = new ContractChecker(spec);

type Mock = Awaited<ReturnType<typeof createMock>>;
const t = suite<{ mock: Mock; url: string }>('mock server: Prefer, error codes, generated lists');
t.before(async (ctx) => {
  ctx.mock = await createMock(spec);
  ctx.url = `http://127.0.0.1:${await ctx.mock.listen(0)}`;
});
t.after(async ({ mock }) => mock.close());

async function get(url: string, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(url + path, {
    headers: { authorization: `Bearer ${SECRET}`, ...headers },
  });
  const body = await res.json();
  checker.check('GET', path, res.status, res.headers.get('content-type'), body);
  return { status: res.status, headers: res.headers, body };
}

t('Prefer: code= a status the operation does not declare is 422 on Prefer', async ({ url }) => {
  const declared = '200, 400, 401, 403, 404, 406, 413, 415, 422, 429, 500, 503';
  for (const prefer of ['code=409', 'code=201', 'code=abc', 'code=404, code=418']) {
    const res = await get(url, '/api/v3/users/1', { prefer });
    assert.is(res.status, 422, prefer);
    assert.is(res.body.error.code, 'validation_failed', prefer);
    assert.equal(
      res.body.error.details,
      [{ parameter: 'Prefer', code: 'invalid_value', message: `Must be one of: ${declared}.` }],
      prefer,
    );
  }
  // `default` stands for 500: asking for it is declared.
  const failed = await get(url, '/api/v3/users/1', { prefer: 'code=500' });
  assert.equal([failed.status, failed.body.error.code], [500, 'internal_error']);
  const ok = await get(url, '/api/v3/users/1', { prefer: 'code=200' });
  assert.is(ok.body.data.object, 'user');
});

t('every declared error status answers a code of that status', async ({ url }) => {
  const wrong: string[] = [];
  let checked = 0;
  for (const [template, item] of Object.entries<any>(spec.paths)) {
    const op = item.get;
    if (!op || template.includes('stream')) continue;
    const path = '/api/v3' + template.replace(/\{[^}]+\}/g, '1');
    for (const status of Object.keys(op.responses).filter((s) => /^[45]/.test(s))) {
      const res = await get(url, path, { prefer: `code=${status}` });
      const code = res.body.error.code as keyof typeof ERROR_STATUS;
      if (res.status !== Number(status) || ERROR_STATUS[code] !== Number(status))
        wrong.push(`${op.operationId} ${status}: ${res.status} ${code}`);
      checked++;
    }
  }
  assert.equal(wrong, []);
  assert.ok(checked > 100, String(checked));

  const missing = await get(url, '/api/v3/users/1', { prefer: 'code=404' });
  assert.equal(missing.body.error, {
    code: 'not_found',
    message: 'The requested resource was not found.',
    request_id: missing.headers.get('x-request-id'),
    details: [],
  });
  // The contract's example is kept where it fits: 422 validation_failed with its details.
  const invalid = await get(url, '/api/v3/users/1', { prefer: 'code=422' });
  assert.equal(invalid.body.error.details, [
    { field: 'email', code: 'invalid_format', message: 'Must be a valid email.' },
  ]);
  const limited = await get(url, '/api/v3/users', { prefer: 'code=429' });
  assert.equal(
    [
      limited.body.error.code,
      limited.body.error.retry_after_seconds,
      limited.headers.get('retry-after'),
    ],
    ['rate_limit_exceeded', 1, '1'],
  );
  // An operation's description names its own code for a status (409 `already_exists`).
  const res = await fetch(url + '/api/v3/users', {
    method: 'POST',
    headers: {
      authorization: `Bearer ${SECRET}`,
      'content-type': 'application/json',
      'idempotency-key': 'k-1',
      prefer: 'code=409',
    },
    body: JSON.stringify({ name: 'Ana', email: 'ana@example.com' }),
  });
  assert.equal([res.status, (await res.json()).error.code], [409, 'already_exists']);
});

t('lists hold generated items, the same for the same path', async ({ url }) => {
  const first = await get(url, '/api/v3/users');
  const again = await get(url, '/api/v3/users');
  assert.equal(again.body, first.body, 'deterministic');
  const users = first.body.data as any[];
  assert.is(users.length, 3);
  assert.is(new Set(users.map((u) => u.id)).size, 3);
  assert.is(new Set(users.map((u) => u.email)).size, 3);
  for (const user of users) {
    assert.is(user.object, 'user');
    assert.match(user.id, /^[1-9][0-9]*$/);
    assert.match(user.email, /^[^@\s]+@[^@\s]+\.[a-z]+$/);
    assert.is.not(user.name, 'string');
  }
  assert.not.match(JSON.stringify(first.body), /"string"/);
  // The page ends the list, so a client following next_cursor stops.
  assert.equal(first.body.page, { limit: 50, next_cursor: null, prev_cursor: null });

  const two = await get(url, '/api/v3/users?limit=2');
  assert.is(two.body.data.length, 2);
  assert.is(two.body.page.limit, 2);
  const tags = await get(url, '/api/v3/tags');
  assert.is(tags.body.data[0].object, 'tag');
  const items = await get(url, '/api/v3/operations/1/items');
  const other = await get(url, '/api/v3/operations/2/items');
  assert.not.equal(items.body.data, other.body.data, 'another path, other items');
});

t('a list schema with a $ref left in (a cycle) is not generated: the examples answer', () => {
  const items = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } };
  const list = (item: object) => ({
    type: 'object',
    properties: { data: { type: 'array', items: item }, page: { type: 'object' } },
  });
  const page = generatedPage(list(items), 'GET /api/v3/things', 2)!;
  assert.is(page.data.length, 2);
  assert.equal(generatedPage(list(items), 'GET /api/v3/things', 2), page);
  assert.is(generatedPage(list({ $ref: '#/components/schemas/Node' }), 'GET /x', 2), undefined);
});

t.run();
