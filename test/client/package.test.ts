// packages/client as a user gets it: `npm pack` (its prepack builds dist/), the tarball installed
// into a scratch project, and that installed copy calling the real server: a create whose first
// answer is lost is retried with the same Idempotency-Key, 503/429 with Retry-After, three pages
// walked by `paginate`, and errors thrown as the package's ApiError.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, type Booted } from '../helpers/app.ts';

type Package = typeof import('../../packages/client/src/index.ts');
const PKG = path.resolve(import.meta.dirname, '../../packages/client');

const t = suite<{ b: Booted; dir: string; client: Package; installed: string }>(
  'typed client: the packed package, installed',
);

t.before(async (ctx) => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-client-'));
  const npm = (args: string[], cwd: string) =>
    execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  const tarball = npm(['pack', '--pack-destination', ctx.dir], PKG).trim().split('\n').pop()!;
  const project = path.join(ctx.dir, 'project');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), '{"private":true,"type":"module"}\n');
  // openapi-fetch comes from the npm cache when it is there (the registry otherwise).
  npm(['install', '--prefer-offline', path.join(ctx.dir, tarball)], project);
  ctx.installed = path.join(project, 'node_modules/@school-platform/client');
  ctx.client = await import(pathToFileURL(path.join(ctx.installed, 'dist/index.js')).href);
  ctx.b = await boot();
});
t.after(async ({ b, dir }) => {
  await b?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

t('the tarball holds ESM and its types, the contract included', ({ installed }) => {
  const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
  assert.is(manifest.type, 'module');
  assert.equal(manifest.exports['.'], { types: './dist/index.d.ts', default: './dist/index.js' });
  assert.equal(manifest.engines, { node: '>=22.18' });
  const types = fs.readFileSync(path.join(installed, 'dist/types.d.ts'), 'utf8');
  assert.match(types, /"\/users\/\{user_id\}": \{/);
  assert.match(
    fs.readFileSync(path.join(installed, 'dist/index.d.ts'), 'utf8'),
    /paginate<T extends ListPath \| ListOperationId>/,
  );
  assert.ok(fs.existsSync(path.join(installed, '../../openapi-fetch')), 'openapi-fetch installed');
});

t('a create whose answer was lost is retried with the same key: one user', async (ctx) => {
  const keys: (string | null)[] = [];
  const api = ctx.client.createClient({
    baseUrl: ctx.b.url,
    secret: ctx.b.secret,
    retryDelay: 1,
    fetch: async (request) => {
      const response = await fetch(request);
      if (request.method === 'POST') keys.push(request.headers.get('idempotency-key'));
      // The server created the user; the answer never reaches the client (a dropped connection).
      if (keys.length === 1) throw new TypeError('fetch failed');
      return response;
    },
  });
  const created = await api.POST('/users', {
    body: { name: 'Ana Souza', email: 'ana.packed@example.com' },
  });
  assert.is(created.response.status, 201);
  assert.is(created.response.headers.get('idempotent-replayed'), 'true');
  assert.is(keys.length, 2);
  assert.match(keys[0]!, /^[0-9a-f-]{36}$/);
  assert.is(keys[1], keys[0]);
  const list = await api.GET('/users', { params: { query: { email: 'ana.packed@example.com' } } });
  assert.equal(
    list.data!.data.map((u) => u.id),
    [created.data!.data.id],
  );
});

t('503 is retried after Retry-After; a 429 asking for too long is answered', async (ctx) => {
  const seen: number[] = [];
  const api = ctx.client.createClient({
    baseUrl: ctx.b.url,
    secret: ctx.b.secret,
    maxRetryDelay: 5_000,
    fetch: async (request) => {
      seen.push(seen.length);
      if (seen.length === 1)
        return new Response('{}', { status: 503, headers: { 'retry-after': '0' } });
      if (request.url.endsWith('/tags')) {
        const body = {
          error: {
            code: 'rate_limit_exceeded',
            message: 'Slow down.',
            request_id: 'req_1',
            details: [],
            retry_after_seconds: 60,
          },
        };
        return Response.json(body, { status: 429, headers: { 'retry-after': '60' } });
      }
      return fetch(request);
    },
  });
  const caps = await api.GET('/capabilities');
  assert.is(caps.response.status, 200);
  assert.is(seen.length, 2);
  const limited = await api.GET('/tags');
  assert.is(seen.length, 3, 'not retried: 60 s is more than maxRetryDelay');
  assert.ok(limited.error instanceof ctx.client.ApiError);
  assert.equal(
    [limited.error.status, limited.error.code, limited.error.retry_after_seconds],
    [429, 'rate_limit_exceeded', 60],
  );
});

t('paginate walks three pages, following page.next_cursor', async (ctx) => {
  const cursors: (string | null)[] = [];
  const api = ctx.client.createClient({
    baseUrl: ctx.b.url,
    secret: ctx.b.secret,
    fetch: async (request) => {
      if (request.method === 'GET') cursors.push(new URL(request.url).searchParams.get('cursor'));
      return fetch(request);
    },
  });
  const made: string[] = [];
  for (let i = 1; i <= 5; i++) {
    const r = await api.POST('/users', { body: { name: `Page ${i}`, email: `p${i}@page.test` } });
    made.push(r.data!.data.id);
  }
  const ids: string[] = [];
  // Six users with the first test's: pages of 2, 2 and 2, the last with next_cursor null.
  for await (const user of api.paginate('/users', { query: { limit: 2 } })) ids.push(user.id);
  assert.is(ids.length, 6);
  assert.is(new Set(ids).size, 6);
  for (const id of made) assert.ok(ids.includes(id), id);
  assert.is(cursors.length, 3);
  assert.is(cursors[0], null);
  assert.ok(cursors[1] && cursors[2] && cursors[1] !== cursors[2]);

  // The same list named by its operationId, as the contract names it: the same users, in order.
  const byId: string[] = [];
  const walked = cursors.length;
  for await (const user of api.paginate('listUsers', { query: { limit: 4 } }))
    byId.push(user.email);
  assert.is(cursors.length - walked, 2, 'two pages of 4');
  assert.equal(byId, await emails(api, ids), 'listUsers walks /users');
  // An operation that is not a list is the caller's mistake, said before any request.
  const before = cursors.length;
  try {
    for await (const _ of api.paginate('getUser' as 'listUsers')) break;
    assert.unreachable('paginate should throw');
  } catch (err) {
    assert.instance(err, TypeError);
    assert.match((err as Error).message, /no list operation getUser/);
  }
  assert.is(cursors.length, before);
});

/** The emails of users by id, in the order given (one GET each). */
async function emails(api: any, ids: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const id of ids) {
    const r = await api.GET('/users/{user_id}', { params: { path: { user_id: id } } });
    out.push(r.data.data.email);
  }
  return out;
}

t('errors are ApiError: status, code, message, details, request_id', async (ctx) => {
  const { ApiError, createClient, unwrap } = ctx.client;
  const api = createClient({ baseUrl: ctx.b.url, secret: ctx.b.secret });
  const missing = await api.GET('/users/{user_id}', {
    params: { path: { user_id: '2147483647' } },
  });
  try {
    unwrap(missing);
    assert.unreachable('unwrap should throw');
  } catch (err) {
    assert.instance(err, ApiError);
    const e = err as InstanceType<typeof ApiError>;
    assert.equal([e.name, e.status, e.code, e.details], ['ApiError', 404, 'not_found', []]);
    assert.is(e.request_id, missing.response.headers.get('x-request-id'));
    assert.match(e.message, /\w/);
    assert.is(e.error.code, 'not_found', 'the envelope as sent');
  }
  try {
    for await (const _ of api.paginate('/users', { query: { limit: 500 } })) break;
    assert.unreachable('paginate should throw');
  } catch (err) {
    assert.instance(err, ApiError);
    const e = err as InstanceType<typeof ApiError>;
    assert.equal([e.status, e.code, e.details[0]?.parameter], [422, 'validation_failed', 'limit']);
  }
});

t.run();
