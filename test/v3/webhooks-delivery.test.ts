// Webhook deliveries to real receivers on 127.0.0.1: Standard Webhooks signatures checked with
// the `standardwebhooks` package, the retry schedule on the test clock (5 s ... 10 h, then dead),
// masked excerpts, 410 Gone, cancellation, secret rotation overlaps, replays, a slow endpoint
// that delays nobody else, a burst in one transaction, and a lease left by a worker that died.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Webhook } from 'standardwebhooks';
import { DAY, HOUR } from '../../src/clock.ts';
import { PER_ENDPOINT, RETRY_MS, WINDOW_MS } from '../../src/domain/webhooks/schedule.ts';
import { idleMs, IDLE_MS } from '../../src/domain/webhooks/sender.ts';
import { transaction } from '../../src/db/tx.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { waitFor } from '../helpers/operations.ts';
import { startReceiver, type Answer, type Received } from '../helpers/receiver.ts';
import { advance, createUser, createWebhook, deliveries, settle } from '../helpers/webhooks.ts';

const W = '/api/v3/webhooks';
const signatures = (r: Received) => String(r.headers['webhook-signature']).split(' ');
const headersOf = (r: Received) => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});
/** The signature `secret` makes for this request (the package's own HMAC). */
const expected = (secret: string, r: Received) =>
  new Webhook(secret).sign(
    String(r.headers['webhook-id']),
    new Date(Number(r.headers['webhook-timestamp']) * 1000),
    r.body,
  );

const t = suite<{ b: Booted }>('v3 webhooks: deliveries');
t.before(async (ctx) => {
  ctx.b = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

/** A receiver and an endpoint for one test; both go at its end. */
async function endpoint(
  b: Booted,
  respond: (r: Received, n: number) => Answer | Promise<Answer>,
  body = {},
) {
  const rcv = await startReceiver(respond);
  const hook = await createWebhook(b, rcv.url, body);
  return {
    rcv,
    ...hook,
    async close() {
      await b.api('DELETE', `${W}/${hook.id}`);
      await rcv.close();
    },
  };
}

t('a delivery is signed (Standard Webhooks) and carries the event as recorded', async ({ b }) => {
  const e = await endpoint(b, () => ({ status: 204 }));
  const other = await endpoint(b, () => ({ status: 200 }), { event_types: ['tag.assigned'] });
  try {
    const user = await createUser(b);
    const [r] = await e.rcv.waitFor(1);
    const verified = new Webhook(e.secret).verify(r!.body, headersOf(r!)) as any;
    assert.is(verified.type, 'user.created');
    assert.is(verified.data.user.id, user.id);
    assert.is(r!.headers['content-type'], 'application/json');
    assert.throws(() => new Webhook(other.secret).verify(r!.body, headersOf(r!)));
    const event = await b.api('GET', `/api/v3/events/${verified.id}`);
    assert.is(r!.body, JSON.stringify(event.body.data), 'the envelope, byte for byte');
    assert.is(r!.headers['webhook-id'], `evt_${verified.id}`);

    const [d] = await settle(b, e.id, (l) => l[0]?.status === 'delivered');
    assert.equal(
      [d.event_id, d.event_type, d.attempts_count, d.next_attempt_at, d.url],
      [verified.id, 'user.created', 1, null, e.rcv.url],
    );
    assert.is(Date.parse(d.deadline_at) - Date.parse(d.created_at), WINDOW_MS);
    assert.equal(
      [d.last_attempt.number, d.last_attempt.origin, d.last_attempt.http_status],
      [1, 'automatic', 204],
    );
    const one = await b.api('GET', `${W}/${e.id}/deliveries/${d.id}`);
    assert.equal(one.body.data, d);
    const attempt = await b.api('GET', `${W}/${e.id}/deliveries/${d.id}/attempts/1`);
    assert.equal(attempt.body.data, d.last_attempt);
    assert.is((await b.api('GET', `${W}/${e.id}/deliveries/${d.id}/attempts/2`)).status, 404);
    assert.is((await b.api('GET', `${W}/${other.id}/deliveries/${d.id}`)).status, 404);
    assert.equal(await deliveries(b, other.id), [], 'not subscribed to user.created');
  } finally {
    await e.close();
    await other.close();
  }
});

t('deliveries list: filters, sort and cursor', async ({ b }) => {
  const e = await endpoint(b, () => ({ status: 200 }));
  try {
    const users = [await createUser(b), await createUser(b), await createUser(b)];
    const all = await settle(
      b,
      e.id,
      (l) => l.length === 3 && l.every((d) => d.status === 'delivered'),
    );
    assert.equal(
      all.map((d) => d.id),
      [...all].sort((x, y) => +y.id - +x.id).map((d) => d.id),
      'newest first',
    );
    const asc = await deliveries(b, e.id, '&sort=created_at');
    assert.equal(
      asc.map((d) => d.id),
      [...all].reverse().map((d) => d.id),
    );
    const page1 = await b.api('GET', `${W}/${e.id}/deliveries?limit=2`);
    assert.is(page1.body.data.length, 2);
    const next = encodeURIComponent(page1.body.page.next_cursor);
    const page2 = await b.api('GET', `${W}/${e.id}/deliveries?limit=2&cursor=${next}`);
    assert.equal(
      page2.body.data.map((d: any) => d.id),
      [all[2].id],
    );
    assert.equal(await deliveries(b, e.id, '&status=failed'), []);
    assert.is((await deliveries(b, e.id, '&status=delivered')).length, 3);
    const byEvent = await deliveries(b, e.id, `&event_id=${all[1].event_id}`);
    assert.equal(
      byEvent.map((d) => d.id),
      [all[1].id],
    );
    assert.equal(await deliveries(b, e.id, '&event_type=tag.removed'), []);
    const after = encodeURIComponent(all[0].created_at);
    const later = await deliveries(b, e.id, `&created_after=${after}`);
    assert.ok(later.some((d) => d.id === all[0].id));
    const before = await deliveries(
      b,
      e.id,
      `&created_before=${encodeURIComponent(all[2].created_at)}`,
    );
    assert.not.ok(before.some((d) => d.id === all[2].id));
    assert.is((await b.api('GET', `${W}/${e.id}/deliveries?status=lost`)).status, 422);
    assert.is((await b.api('GET', `${W}/${e.id}/deliveries?limit=201`)).status, 422);
    assert.is(users.length, 3);
  } finally {
    await e.close();
  }
});

t(
  'failures are retried at 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then the delivery is dead',
  async ({ b }) => {
    const e = await endpoint(b, () => ({ status: 500, body: 'down' }));
    try {
      await createUser(b);
      let [d] = await settle(b, e.id, (l) => l[0]?.attempts_count === 1);
      const created = Date.parse(d.created_at);
      assert.is(d.status, 'failed');
      assert.is(Date.parse(d.next_attempt_at), created + RETRY_MS[0]!);
      let offset = 0;
      for (let k = 0; k < RETRY_MS.length; k++) {
        offset += RETRY_MS[k]!;
        // Not yet: half a minute before the retry is due, nothing happens. (The test clock
        // also moves with real time, so the margin is wide; the 5 s retry has none to spare.)
        const early = RETRY_MS[k]! >= 60_000 ? 30_000 : 0;
        await advance(b, RETRY_MS[k]! - early);
        if (early) {
          assert.is((await deliveries(b, e.id))[0].attempts_count, k + 1);
          await advance(b, early);
        }
        [d] = await settle(b, e.id, (l) => l[0]?.attempts_count === k + 2);
        const last = k === RETRY_MS.length - 1;
        assert.is(d.status, last ? 'dead' : 'failed');
        const next = last ? null : created + offset + RETRY_MS[k + 1]!;
        assert.is(d.next_attempt_at && Date.parse(d.next_attempt_at), next);
      }
      assert.is(Date.parse(d.deadline_at), created + WINDOW_MS);
      assert.is(e.rcv.received.length, 8);
      const attempts = [];
      for (let n = 1; n <= 8; n++)
        attempts.push(
          (await b.api('GET', `${W}/${e.id}/deliveries/${d.id}/attempts/${n}`)).body.data,
        );
      assert.equal(
        attempts.map((a) => [a.number, a.origin, a.http_status, a.response_excerpt]),
        attempts.map((_, i) => [i + 1, 'automatic', 500, 'down']),
      );
      assert.is(attempts[7].next_attempt_at, null);
      await advance(b, 10 * HOUR);
      assert.is((await deliveries(b, e.id))[0].attempts_count, 8, 'nothing after dead');
    } finally {
      await e.close();
    }
  },
);

t('a retry that succeeds delivers; the excerpt is masked and at most 1 KiB', async ({ b }) => {
  const leak =
    '{"error":"down","api_key":"abcd1234secretvalue","auth":"Bearer eyJhbGciOi.eyJzdWIi.sig",' +
    '"hook":"whsec_c2VjcmV0c2VjcmV0","id":"9f8e7d6c5b4a39281706f5e4d3c2b1a0ffee","pad":"' +
    'é'.repeat(2000) +
    '"}';
  const e = await endpoint(b, (_r, n) => (n === 1 ? { status: 503, body: leak } : { status: 200 }));
  try {
    await createUser(b);
    let [d] = await settle(b, e.id, (l) => l[0]?.attempts_count === 1);
    const excerpt: string = d.last_attempt.response_excerpt;
    assert.ok(Buffer.byteLength(excerpt) <= 1024, `${Buffer.byteLength(excerpt)} bytes`);
    assert.ok(excerpt.startsWith('{"error":"down"'));
    for (const secret of ['abcd1234secretvalue', 'eyJhbGciOi', 'c2VjcmV0c2VjcmV0', '9f8e7d6c5b4a'])
      assert.not.ok(excerpt.includes(secret), secret);
    assert.ok(excerpt.includes('[masked]'));
    assert.not.ok(excerpt.endsWith('\uFFFD'), 'no half character');
    await advance(b, RETRY_MS[0]!);
    [d] = await settle(b, e.id, (l) => l[0]?.status === 'delivered');
    assert.equal([d.attempts_count, d.next_attempt_at], [2, null]);
    assert.is(d.delivered_at, d.last_attempt.finished_at);
  } finally {
    await e.close();
  }
});

t('a 410 disables the endpoint and cancels its deliveries', async ({ b }) => {
  const e = await endpoint(b, () => ({ status: 410 }));
  try {
    await createUser(b);
    const [d] = await settle(b, e.id, (l) => l[0]?.attempts_count === 1);
    assert.equal(
      [d.status, d.last_attempt.http_status, d.next_attempt_at],
      ['canceled', 410, null],
    );
    const w = await b.api('GET', `${W}/${e.id}`);
    assert.equal([w.body.data.status, w.body.data.disabled_reason], ['disabled', 'endpoint_gone']);
    await createUser(b);
    assert.is((await deliveries(b, e.id)).length, 1, 'a disabled endpoint gets no deliveries');
    await advance(b, RETRY_MS[0]!);
    assert.is(e.rcv.received.length, 1);
  } finally {
    await e.close();
  }
});

t('disabling an endpoint cancels its failed deliveries; nothing more is sent', async ({ b }) => {
  const e = await endpoint(b, () => ({ status: 500 }));
  try {
    await createUser(b);
    await settle(b, e.id, (l) => l[0]?.status === 'failed');
    const res = await b.api('PATCH', `${W}/${e.id}`, { body: { status: 'disabled' } });
    assert.is(res.status, 200);
    const [d] = await deliveries(b, e.id);
    assert.equal([d.status, d.next_attempt_at, d.attempts_count], ['canceled', null, 1]);
    await advance(b, RETRY_MS[0]!);
    assert.is(e.rcv.received.length, 1);
  } finally {
    await e.close();
  }
});

t(
  'secret rotation: one signature per active secret during the overlap, then only the new',
  async ({ b }) => {
    const e = await endpoint(b, () => ({ status: 200 }));
    try {
      const rotate = (body: object, key = newKey()) =>
        b.api('POST', `${W}/${e.id}/secret-rotations`, { body, key });
      const tooLong = await rotate({ overlap_hours: 73 });
      assert.is(tooLong.status, 422);
      const key = newKey();
      const first = await rotate({}, key);
      assert.is(first.status, 201);
      const s2: string = first.body.data.secret;
      assert.match(s2, /^whsec_/);
      assert.is(first.body.data.object, 'webhook_secret_rotation');
      const expires = Date.parse(first.body.data.previous_secret_expires_at);
      const now = b.clock.now().getTime();
      assert.ok(expires > now + 24 * HOUR - 60_000 && expires <= now + 24 * HOUR, 'default 24 h');
      const replay = await rotate({}, key);
      assert.is(replay.status, 409);
      assert.is(replay.body.error.code, 'secret_not_replayable');
      const second = await rotate({ overlap_hours: 1 });
      const s3: string = second.body.data.secret;

      await createUser(b);
      const [r1] = await e.rcv.waitFor(1);
      // At most two sign: the second rotation cut the first secret's overlap short.
      assert.is(signatures(r1!).length, 2, 'the second secret and the new one');
      // Compared with the package's own signatures: earlier tests moved the clock, so the
      // timestamps are hours ahead of the wall clock its verify() checks them against.
      for (const secret of [s2, s3]) assert.ok(signatures(r1!).includes(expected(secret, r1!)));
      assert.not.ok(signatures(r1!).includes(expected(e.secret, r1!)));

      // One hour later the overlap is over: the new secret alone signs.
      b.clock.advance(HOUR + 1000);
      await createUser(b);
      const [, r2] = await e.rcv.waitFor(2);
      assert.equal(signatures(r2!), [expected(s3, r2!)]);
      assert.not.ok(signatures(r2!).includes(expected(e.secret, r2!)));
      assert.not.ok(signatures(r2!).includes(expected(s2, r2!)));
    } finally {
      await e.close();
    }
  },
);

/**
 * A receiver that answers 204 (with `keepAlive` as its Keep-Alive header, if any), counts the
 * connections it accepts and the requests by webhook-id; `reset(n)` says which requests it reads
 * and then answers by resetting the connection.
 */
async function rawReceiver(keepAlive?: string, reset: (n: number) => boolean = () => false) {
  let n = 0;
  const ids: string[] = [];
  const server = http.createServer((req, res) => {
    const count = ++n;
    ids.push(String(req.headers['webhook-id']));
    req.resume();
    req.on('end', () => {
      if (reset(count)) return req.socket.resetAndDestroy();
      res.writeHead(204, keepAlive ? { 'keep-alive': keepAlive } : {}).end();
    });
  });
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    ids,
    connections: () => connections,
    close: () =>
      new Promise<void>((r) => server.close(() => r())).then(() => server.closeAllConnections()),
  };
}

t(
  'a reused connection reset after the request was read: one failed attempt, sent once',
  async ({ b }) => {
    const rcv = await rawReceiver(undefined, (n) => n === 2);
    const hook = await createWebhook(b, rcv.url);
    try {
      await createUser(b);
      await settle(b, hook.id, (l) => l[0]?.status === 'delivered');
      await createUser(b);
      const list = await settle(
        b,
        hook.id,
        (l) => l.length === 2 && l[0]?.attempts_count === 1 && l[0]?.status === 'failed',
      );
      const d = list[0];
      assert.is(rcv.connections(), 1, 'the second delivery went over the kept-alive connection');
      assert.ok(d.last_attempt.transport_error, JSON.stringify(d.last_attempt));
      assert.is(d.last_attempt.http_status, null);
      assert.is(
        rcv.ids.filter((id) => id === rcv.ids[1]).length,
        1,
        'sent once, not again at once',
      );
      await advance(b, RETRY_MS[0]!);
      const [again] = await settle(b, hook.id, (l) => l[0]?.status === 'delivered');
      assert.is(again.attempts_count, 2);
      assert.is(rcv.ids.length, 3);
    } finally {
      await b.api('DELETE', `${W}/${hook.id}`);
      await rcv.close();
    }
  },
);

t(
  "idle connections close before the receiver's Keep-Alive timeout says it closes them",
  async ({ b }) => {
    assert.equal(
      [idleMs(undefined), idleMs('timeout=60'), idleMs('timeout=3, max=100'), idleMs('timeout=1')],
      [IDLE_MS, IDLE_MS, 2000, 0],
    );
    for (const [hint, connections] of [
      [undefined, 1],
      ['timeout=1', 3],
    ] as const) {
      const rcv = await rawReceiver(hint);
      const hook = await createWebhook(b, rcv.url);
      try {
        for (let i = 1; i <= 3; i++) {
          await createUser(b);
          await settle(
            b,
            hook.id,
            (l) => l.length === i && l.every((d) => d.status === 'delivered'),
          );
        }
        assert.is(rcv.connections(), connections, String(hint));
      } finally {
        await b.api('DELETE', `${W}/${hook.id}`);
        await rcv.close();
      }
    }
  },
);

t('a slow endpoint holds at most its own slots and delays no other endpoint', async ({ b }) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const slow = await endpoint(b, () => gate.then(() => ({ status: 200 })), {
    event_types: ['user.created'],
  });
  const fast = await endpoint(b, () => ({ status: 200 }), { event_types: ['user.created'] });
  try {
    for (let i = 0; i < PER_ENDPOINT + 2; i++) await createUser(b);
    const n = PER_ENDPOINT + 2;
    await settle(b, fast.id, (l) => l.length === n && l.every((d) => d.status === 'delivered'));
    const held = await settle(
      b,
      slow.id,
      (l) => l.filter((d) => d.status === 'in_progress').length === PER_ENDPOINT,
    );
    assert.is(held.filter((d) => d.status === 'pending').length, 2, 'the rest wait their turn');
    await slow.rcv.waitFor(PER_ENDPOINT);
    assert.is(slow.rcv.received.length, PER_ENDPOINT);
    release();
    await settle(b, slow.id, (l) => l.length === n && l.every((d) => d.status === 'delivered'));
    assert.is(slow.rcv.received.length, n);
  } finally {
    release();
    await slow.close();
    await fast.close();
  }
});

t(
  'a burst recorded in one transaction: each event once, at most PER_ENDPOINT at a time',
  async ({ b }) => {
    let now = 0;
    let most = 0;
    const e = await endpoint(
      b,
      async () => {
        most = Math.max(most, ++now);
        await new Promise((r) => setTimeout(r, 2));
        now--;
        return { status: 204 };
      },
      { event_types: ['tag.removed'] },
    );
    try {
      const { db } = b.app.services;
      const n = PER_ENDPOINT * 5;
      const ids = await transaction(db, async (tx) => {
        const out: string[] = [];
        for (let i = 0; i < n; i++) {
          const data = { user_id: String(i + 1), tag: { id: '1', name: `t${i}` } };
          const ev = await b.app.services.events.record(
            { tx },
            {
              accountId: b.accountId,
              type: 'tag.removed',
              data,
            },
          );
          out.push(`evt_${ev.id}`);
        }
        return out;
      });
      await settle(b, e.id, (l) => l.length === n && l.every((d) => d.status === 'delivered'));
      const got = e.rcv.received.map((r) => String(r.headers['webhook-id']));
      assert.equal([...got].sort(), [...ids].sort(), 'every event once');
      assert.ok(most <= PER_ENDPOINT, `${most} attempts at once`);
      assert.ok(most > 1, 'more than one at a time');
    } finally {
      await e.close();
    }
  },
);

/** What a worker that claimed the delivery and then died leaves behind: its lease. */
async function deadLease(b: Booted, id: string, until: string, more: Record<string, string> = {}) {
  await b.app.services
    .db('webhook_deliveries')
    .where({ id: Number(id) })
    .update({
      status: 'in_progress',
      prior_status: 'failed',
      lease_owner: 'dead-worker',
      lease_until: until,
      due_at: until,
      ...more,
    });
}

t('an attempt whose worker died is sent again once its lease has run out', async ({ b }) => {
  const e = await endpoint(b, (_r, n) => ({ status: n === 1 ? 500 : 200 }), {
    event_types: ['user.created'],
  });
  try {
    await createUser(b);
    const [d] = await settle(b, e.id, (l) => l[0]?.status === 'failed');
    // A worker claims the retry, then dies: its lease stays behind.
    await deadLease(b, d.id, new Date(b.clock.now().getTime() + 60_000).toISOString());
    await advance(b, RETRY_MS[0]!);
    assert.is(e.rcv.received.length, 1, 'the lease holds');
    await advance(b, 60_000);
    const [after] = await settle(b, e.id, (l) => l[0]?.status === 'delivered');
    assert.equal([after.attempts_count, e.rcv.received.length], [2, 2]);
    // The claim that took the dead worker's lease over is counted in the row (src/db/lease.ts).
    const row = await b.app.services
      .db('webhook_deliveries')
      .where({ id: Number(d.id) })
      .first();
    assert.is(Number(row.lease_takeovers), 1);
  } finally {
    await e.close();
  }
});

t(
  "the sweep recovers an expired lease even behind another endpoint's waiting backlog",
  async ({ b }) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // A slow endpoint fills its slots; more of its deliveries wait, due since they were recorded.
    const slow = await endpoint(b, () => gate.then(() => ({ status: 200 })), {
      event_types: ['tag.assigned'],
    });
    const other = await endpoint(b, (_r, n) => ({ status: n === 1 ? 500 : 200 }), {
      event_types: ['user.created'],
    });
    try {
      const user = await createUser(b);
      for (let i = 0; i < PER_ENDPOINT + 6; i++) {
        const tag = await b.api('POST', '/api/v3/tags', {
          body: { name: `sweep-${newKey()}` },
          key: newKey(),
        });
        await b.api('PUT', `/api/v3/users/${user.id}/tags/${tag.body.data.id}`, { key: newKey() });
      }
      const held = await settle(
        b,
        slow.id,
        (l) => l.filter((x) => x.status === 'in_progress').length === PER_ENDPOINT,
      );
      assert.is(held.filter((x) => x.status === 'pending').length, 6);
      // The other endpoint's delivery failed; a worker that then died holds its retry under a
      // lease that has just run out. The retry is made due by its next_attempt_at alone, so its
      // job (5 s later, on either engine's clock) has not run: the sweep is what must find it.
      const [d] = await settle(b, other.id, (l) => l[0]?.status === 'failed');
      b.clock.advance(1000);
      const expired = new Date(b.clock.now().getTime() - 500).toISOString();
      await deadLease(b, d.id, expired, { next_attempt_at: expired });
      // A sweep just large enough for what is due and not waiting (this suite's earlier
      // endpoints leave some): the 6 waiting deliveries are older than the lease, yet it is
      // recovered.
      const [{ n }] = await b.app.services
        .db('webhook_deliveries')
        .where('waiting', false)
        .where('due_at', '<=', b.clock.now().toISOString())
        .count({ n: '*' });
      await b.app.services.webhookDispatcher.runDue({ limit: Number(n), wait: true });
      const [after] = await deliveries(b, other.id);
      assert.equal([after.id, after.status, after.attempts_count], [d.id, 'delivered', 2]);
    } finally {
      release();
      await slow.close();
      await other.close();
    }
  },
);

t(
  'replays add attempts (origin replay) to the existing deliveries, as an operation',
  async ({ b }) => {
    // Not `*`: the replay operation's own operation.finished would be delivered too.
    const e = await endpoint(b, () => ({ status: 200 }), { event_types: ['user.created'] });
    try {
      await createUser(b);
      await createUser(b);
      await createUser(b);
      const before = await settle(
        b,
        e.id,
        (l) => l.length === 3 && l.every((d) => d.status === 'delivered'),
      );
      const replay = (body: object) =>
        b.api('POST', `${W}/${e.id}/replays`, { body, key: newKey() });

      const none = await replay({ event_types: ['tag.removed'] });
      assert.is(none.status, 422);
      assert.is(none.body.error.code, 'domain_rule_violation');
      assert.is(none.body.error.details[0].reason, 'no_matching_events');

      const res = await replay({});
      assert.is(res.status, 202);
      const op = res.body.data;
      assert.equal([op.type, op.progress.total], ['webhook.replay', 3]);
      assert.is(res.headers.get('location'), `/api/v3/operations/${op.id}`);
      assert.is((await waitFor(b, op.id)).status, 'succeeded');
      const items = await b.api('GET', `/api/v3/operations/${op.id}/items`);
      assert.equal(
        items.body.data.map((i: any) => i.key).sort(),
        before.map((d) => d.event_id).sort(),
      );
      const after = await settle(b, e.id, (l) => l.every((d) => d.attempts_count === 2));
      assert.is(after.length, 3, 'no new delivery');
      assert.ok(after.every((d) => d.last_attempt.origin === 'replay' && d.status === 'delivered'));
      await e.rcv.waitFor(6);
      const ids = e.rcv.received.map((r) => r.headers['webhook-id']);
      assert.equal(ids.slice(3).sort(), ids.slice(0, 3).sort(), 'the same events, as recorded');
      for (const r of e.rcv.received.slice(3)) {
        const original = e.rcv.received.find(
          (o) => o.headers['webhook-id'] === r.headers['webhook-id'],
        );
        assert.is(r.body, original!.body);
      }

      const one = await replay({ event_ids: [before[0].event_id] });
      assert.is(one.body.data.progress.total, 1);
      await waitFor(b, one.body.data.id);
      await settle(b, e.id, (l) => l.find((d) => d.id === before[0].id)?.attempts_count === 3);

      const disabled = await b.api('PATCH', `${W}/${e.id}`, { body: { status: 'disabled' } });
      assert.is(disabled.status, 200);
      const refused = await replay({});
      assert.is(refused.status, 409);
      assert.is(refused.body.error.code, 'state_conflict');
      await b.api('PATCH', `${W}/${e.id}`, { body: { status: 'enabled' } });

      // Past the 30-day retention nothing qualifies.
      b.clock.advance(31 * DAY);
      const gone = await replay({});
      assert.is(gone.status, 422);
      assert.is(gone.body.error.details[0].reason, 'no_matching_events');
    } finally {
      await e.close();
    }
  },
);

t.run();
