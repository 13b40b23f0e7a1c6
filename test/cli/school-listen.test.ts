// `npm run school -- events listen`: one line per event, --types, --forward-to with Standard
// Webhooks signatures (checked with the standardwebhooks library), reconnection with
// Last-Event-ID after the connection drops (through a proxy the test cuts), reuse of the
// credential's free stream, and a clean stop.
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Webhook } from 'standardwebhooks';
import { main } from '../../src/cli/school/main.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted; dir: string }>('school events listen');
t.before(async (ctx) => {
  ctx.b = await boot();
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-listen-'));
});
t.after(async (ctx) => {
  await ctx.b.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

/** A TCP proxy to the app whose connections the test can cut; keeps each request's head. */
async function proxy(port: number) {
  const sockets = new Set<net.Socket>();
  const heads: string[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (d) => {
      const text = d.toString('latin1');
      if (/^[A-Z]+ \//.test(text)) heads.push(text);
    });
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    heads,
    cut: () => sockets.forEach((s) => s.destroy()),
    close: () =>
      new Promise<void>((r) => {
        sockets.forEach((s) => s.destroy());
        server.close(() => r());
      }),
  };
}

/** The local endpoint events are forwarded to. */
async function receiver() {
  const got: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hooks`,
    got,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function run(b: Booted, dir: string, baseUrl: string, args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const stop = new AbortController();
  const code = main(['events', 'listen', '--base-url', baseUrl, '--api-key', b.secret, ...args], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env: { SCHOOL_CONFIG_DIR: dir, SCHOOL_RETRY_MS: '50' },
    signal: stop.signal,
  });
  return { out, err, code, stop: () => stop.abort() };
}

async function until(pred: () => boolean, what: string) {
  const deadline = Date.now() + 15_000;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let n = 0;
async function userCreated(b: Booted) {
  const res = await b.api('POST', '/api/v3/users', {
    body: { name: `L ${++n}`, email: `listen${n}-${process.pid}@example.com` },
    key: newKey(),
  });
  assert.is(res.status, 201);
  const page = await b.api('GET', '/api/v3/events?type=user.created&limit=1');
  return page.body.data[0];
}

t(
  'prints and forwards signed events, reconnects after the last id, reuses its stream',
  async ({ b, dir }) => {
    const p = await proxy(Number(new URL(b.url).port));
    const hooks = await receiver();
    try {
      const r = run(b, dir, p.url, ['--types', 'user.created', '--forward-to', hooks.url]);
      await until(() => r.err.some((l) => l.includes('webhook signing secret')), 'the secret');
      const secret = /(whsec_\S+)/.exec(r.err.join('\n'))![1]!;
      const streamId = /event stream (\d+)/.exec(r.err[0]!)![1]!;
      await until(
        () => p.heads.some((h) => h.includes(`/event-streams/${streamId}/events`)),
        'the stream',
      );

      const e1 = await userCreated(b);
      const tag = await b.api('POST', '/api/v3/tags', { body: { name: 'Listen' }, key: newKey() });
      assert.is(tag.status, 201); // not a user.created: filtered out
      const e2 = await userCreated(b);
      await until(() => r.out.length >= 2, 'two lines');
      assert.equal(r.out, [
        `${e1.id}  user.created  ${e1.created_at}  -> 204`,
        `${e2.id}  user.created  ${e2.created_at}  -> 204`,
      ]);
      // Signed like a webhook: the standardwebhooks library accepts it with the printed secret.
      const wh = new Webhook(secret);
      const verified = hooks.got.map((h) => wh.verify(h.body, h.headers as Record<string, string>));
      assert.equal(verified, [e1, e2]);
      assert.is(hooks.got[0]!.headers['webhook-id'], `evt_${e1.id}`);
      assert.throws(() =>
        new Webhook(secret).verify(hooks.got[0]!.body + ' ', hooks.got[0]!.headers as any),
      );

      // The connection drops; the CLI comes back after the last event it received.
      const before = p.heads.length;
      p.cut();
      const e3 = await userCreated(b);
      await until(() => r.out.length >= 3, 'the third line');
      const resumed = p.heads.slice(before).find((h) => h.includes('/events'));
      assert.match(resumed!, new RegExp(`last-event-id: ${e2.id}\\r\\n`, 'i'));
      assert.equal(
        r.out.map((l) => l.split('  ')[0]),
        [e1.id, e2.id, e3.id],
      );
      r.stop();
      assert.is(await r.code, 0);

      // The stream is the credential's and free again: the next run goes on where this one stopped.
      const deadline = Date.now() + 10_000;
      while ((await b.api('GET', `/api/v3/event-streams/${streamId}`)).body.data.connected) {
        if (Date.now() > deadline) throw new Error('stream still connected');
        await new Promise((res) => setTimeout(res, 10));
      }
      const e4 = await userCreated(b);
      const again = run(b, dir, b.url, ['--types', 'user.created']);
      await until(() => again.out.length >= 1, 'the event recorded between runs');
      assert.match(again.err[0]!, new RegExp(`event stream ${streamId} `));
      assert.equal(again.out, [`${e4.id}  user.created  ${e4.created_at}`]);
      again.stop();
      assert.is(await again.code, 0);
    } finally {
      await p.close();
      await hooks.close();
    }
  },
);

t('a stream that cannot be followed ends with exit 1', async ({ b, dir }) => {
  const r = run(b, dir, b.url, ['--stream', '999999']);
  assert.is(await r.code, 1);
  assert.match(r.err.at(-1)!, /^error: not_found: /);
  const usage = await main(['events', 'listen', '--base-url', b.url], {
    out: () => undefined,
    err: () => undefined,
    env: { SCHOOL_CONFIG_DIR: dir },
  });
  assert.is(usage, 2);
});

t.run();
