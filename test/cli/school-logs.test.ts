// `school logs tail`: follows the account's audit trail from the moment it starts, one line per
// request (time, status, method, path, duration, request id, operation), oldest first, without its
// own polls; `--status 4xx` keeps a class; a status that is not one is exit 2 before any call.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../../src/cli/school/main.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted }>('school logs tail');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

/** Starts the tail in-process; `until` resolves once it has printed `n` lines, then stops it. */
function tail(b: Booted, args: string[] = []) {
  const out: string[] = [];
  const err: string[] = [];
  const stop = new AbortController();
  let waiting: { n: number; resolve: () => void } | undefined;
  const done = main(['logs', 'tail', ...args, '--base-url', b.url, '--api-key', b.secret], {
    out: (l) => {
      out.push(l);
      if (waiting && out.length >= waiting.n) waiting.resolve();
    },
    err: (l) => err.push(l),
    env: { SCHOOL_POLL_MS: '25' },
    signal: stop.signal,
  });
  return {
    out,
    err,
    /** Resolves when the tail says it follows (its starting point is set). */
    started: async () => {
      for (let i = 0; i < 400 && !err.some((l) => l.startsWith('Following')); i++)
        await new Promise((r) => setTimeout(r, 10));
    },
    until: (n: number) =>
      new Promise<void>((resolve, reject) => {
        if (out.length >= n) return resolve();
        const timer = setTimeout(
          () => reject(new Error(`printed only: ${out.join('\n')}`)),
          15_000,
        );
        waiting = { n, resolve: () => (clearTimeout(timer), resolve()) };
      }),
    stop: async () => {
      stop.abort();
      return done;
    },
  };
}

t('follows new requests, oldest first, one line each, without its own polls', async ({ b }) => {
  await b.api('GET', '/api/v3/tags'); // before the tail: not shown
  const logs = tail(b);
  await logs.started();
  const calls = [
    await b.api('POST', '/api/v3/tags', { key: newKey(), body: { name: 'tail-1' } }),
    await b.api('GET', '/api/v3/users/2147483647'),
    await b.api('POST', '/api/v3/tags', { key: newKey(), body: {} }),
  ];
  await logs.until(3);
  // A quiet moment: the tail keeps polling and prints nothing of its own.
  await new Promise((r) => setTimeout(r, 200));
  assert.is(await logs.stop(), 0, logs.err.join('\n'));
  const ids = calls.map((c) => c.headers.get('x-request-id'));
  const rows = logs.out.map((l) => l.split(/\s{2,}/));
  assert.equal(
    rows.map((r) => [r[1], r[2], r[3], r[5], r[6]]),
    [
      ['201', 'POST', '/api/v3/tags', ids[0], 'createTag'],
      ['404', 'GET', '/api/v3/users/2147483647', ids[1], 'getUser'],
      ['422', 'POST', '/api/v3/tags', ids[2], 'createTag'],
    ],
  );
  for (const r of rows) {
    assert.match(r[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.match(r[4]!, /^\d+ms$/);
  }
});

t('--status 4xx shows only client errors; --since starts earlier', async ({ b }) => {
  const since = new Date(Date.now() - 1).toISOString();
  const before = await b.api('GET', '/api/v3/users/2147483646');
  const logs = tail(b, ['--status', '4xx', '--since', since]);
  await logs.started();
  await b.api('GET', '/api/v3/tags');
  const after = await b.api('POST', '/api/v3/tags', { key: newKey(), body: {} });
  await logs.until(2);
  await new Promise((r) => setTimeout(r, 100));
  assert.is(await logs.stop(), 0);
  assert.equal(
    logs.out.map((l) => [l.split(/\s{2,}/)[1], l.split(/\s{2,}/)[5]]),
    [
      ['404', before.headers.get('x-request-id')],
      ['422', after.headers.get('x-request-id')],
    ],
  );
});

t('a status that is not one: exit 2, no call made', async ({ b }) => {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['logs', 'tail', '--status', '4x', '--base-url', 'http://127.0.0.1:9'], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env: { SCHOOL_API_KEY: b.secret },
  });
  assert.is(code, 2);
  assert.equal(err, ["error: --status: '4x' is not a status (404) or a class (4xx)"]);
});

t.run();
