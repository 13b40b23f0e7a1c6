// Webhooks hardened (issue 21): rotations of one endpoint take turns and leave at most two
// secrets signing, which GET shows by hint; IPv6 forms that embed or route to a private IPv4 are
// refused at registration and at every delivery; a name that does not resolve and one that
// resolves to a private address fail with the same message.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Webhook } from 'standardwebhooks';
import { HOUR } from '../../src/clock.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { startReceiver, type Received, type Receiver } from '../helpers/receiver.ts';
import { createUser, createWebhook, settle } from '../helpers/webhooks.ts';

const W = '/api/v3/webhooks';
const signatures = (r: Received) => String(r.headers['webhook-signature']).split(' ');
const expected = (secret: string, r: Received) =>
  new Webhook(secret).sign(
    String(r.headers['webhook-id']),
    new Date(Number(r.headers['webhook-timestamp']) * 1000),
    r.body,
  );
const hint = (secret: string) => `${secret.slice(0, 10)}...`;

const t = suite<{ b: Booted; rcv: Receiver }>('v3 webhooks hardened: rotations');
t.before(async (ctx) => {
  ctx.b = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  ctx.rcv = await startReceiver();
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => {
  await ctx.rcv.close();
  await ctx.b.close();
});

const rotate = (b: Booted, id: string, overlap_hours?: number) =>
  b.api('POST', `${W}/${id}/secret-rotations`, {
    body: overlap_hours === undefined ? {} : { overlap_hours },
    key: newKey(),
  });

t('ten rotations at once with no overlap: one secret signs, the last one', async ({ b, rcv }) => {
  const { id } = await createWebhook(b, rcv.url, { event_types: ['user.created'] });
  const results = await Promise.all(Array.from({ length: 10 }, () => rotate(b, id, 0)));
  assert.equal(
    results.map((r) => r.status),
    Array.from({ length: 10 }, () => 201),
  );
  const secrets = results.map((r) => r.body.data.secret as string);
  const shown = (await b.api('GET', `${W}/${id}`)).body.data.signing_secrets;
  assert.is(shown.length, 1, JSON.stringify(shown));
  assert.is(shown[0].expires_at, null);
  const current = secrets.filter((s) => hint(s) === shown[0].hint);
  assert.is(current.length, 1);
  await createUser(b);
  const [r] = await rcv.waitFor(1);
  assert.equal(signatures(r!), [expected(current[0]!, r!)]);
});

t('rotations with overlaps: never more than two sign; GET says which', async ({ b }) => {
  const rcv = await startReceiver();
  try {
    const { id, secret: s1 } = await createWebhook(b, rcv.url, { event_types: ['user.created'] });
    const s2 = (await rotate(b, id, 24)).body.data.secret as string;
    const now = b.clock.now().toISOString();
    const after = (await b.api('GET', `${W}/${id}`)).body.data.signing_secrets;
    assert.equal(
      after.map((x: any) => [x.hint, x.expires_at === null]),
      [
        [hint(s2), true],
        [hint(s1), false],
      ],
    );
    assert.ok(after[1].expires_at > now);
    const s3 = (await rotate(b, id, 24)).body.data.secret as string;
    const s4 = (await rotate(b, id, 48)).body.data.secret as string;
    const shown = (await b.api('GET', `${W}/${id}`)).body.data.signing_secrets;
    assert.equal(
      shown.map((x: any) => x.hint),
      [hint(s4), hint(s3)],
    );
    // The list shows the same, and never a secret itself.
    const list = await b.api('GET', W);
    const listed = list.body.data.find((x: any) => x.id === id);
    assert.equal(listed.signing_secrets, shown);
    for (const s of [s1, s2, s3, s4]) assert.not.ok(list.text.includes(s.slice(10)));
    await createUser(b);
    const [r] = await rcv.waitFor(1);
    assert.equal(signatures(r!), [expected(s4, r!), expected(s3, r!)]);
    // After s3's overlap (48 h, from the last rotation), s4 alone.
    b.clock.advance(48 * HOUR + 1000);
    const alone = (await b.api('GET', `${W}/${id}`)).body.data.signing_secrets;
    assert.equal(
      alone.map((x: any) => [x.hint, x.expires_at]),
      [[hint(s4), null]],
    );
  } finally {
    await rcv.close();
  }
});

const p = suite<{ b: Booted; rcv: Receiver }>('v3 webhooks hardened: embedded IPv4');
p.before(async (ctx) => {
  ctx.b = await boot(); // WEBHOOK_ALLOW_PRIVATE_TARGETS unset: false
  ctx.rcv = await startReceiver();
});
p.after(async (ctx) => {
  await ctx.rcv.close();
  await ctx.b.close();
});

/** IPv6 literals that embed, or route to, a private IPv4 address (or a private network). */
const EMBEDDED = [
  '::7f00:1', // IPv4-compatible ::127.0.0.1
  '::127.0.0.1',
  '::a00:1', // ::10.0.0.1
  '::ffff:0:7f00:1', // SIIT ::ffff:0:127.0.0.1
  '::ffff:0:a9fe:a9fe', // SIIT 169.254.169.254
  '2002:7f00:1::', // 6to4 of 127.0.0.1
  '2002:a9fe:a9fe::1', // 6to4 of the metadata service
  '64:ff9b::a00:1', // NAT64 of 10.0.0.1
  '64:ff9b:1::a00:1', // local-use NAT64
  '2001:0:4136:e378:8000:63bf:80ff:fefe', // Teredo, client 127.0.1.1
  '2001:0:a00:1::1', // Teredo, server 10.0.0.1
  'fec0::1', // site-local
];

p('IPv6 literals embedding a private IPv4: 422 private_target', async ({ b }) => {
  for (const address of EMBEDDED) {
    const url = `http://[${address}]/hooks`;
    const res = await b.api('POST', W, { body: { url, event_types: ['*'] }, key: newKey() });
    assert.is(res.status, 422, url);
    assert.equal(
      res.body.error.details.map((d: any) => [d.field, d.code]),
      [['url', 'private_target']],
      url,
    );
  }
  // The same forms around a public IPv4 are public.
  for (const address of ['2002:808:808::1', '::ffff:0:808:808']) {
    const res = await b.api('POST', W, {
      body: { url: `http://[${address}]/hooks`, event_types: ['*'], description: 'public' },
      key: newKey(),
    });
    assert.is(res.status, 201, address);
    // Tests reach no real host: it must receive nothing.
    assert.is((await b.api('DELETE', `${W}/${res.body.data.id}`)).status, 204);
  }
});

p('a name that resolves to them at delivery time reaches nothing', async ({ b, rcv }) => {
  await b.app.startWorkers();
  const port = new URL(rcv.url).port;
  const sender = b.app.services.webhookDispatcher.sender;
  const saved = sender.lookup;
  let next = 0;
  sender.lookup = async () => [{ address: EMBEDDED[next]!, family: 6 }];
  try {
    const { id } = await createWebhook(b, `http://rebind.example.test:${port}/hooks`, {
      event_types: ['user.created'],
    });
    for (; next < EMBEDDED.length; next++) {
      await createUser(b);
      // The newest delivery (first in the list) has had its attempt. Not "every one exactly
      // one": on a loaded machine the loop outlasts the first retry (5 s, real time on
      // PostgreSQL's job clock), and the earlier deliveries are then on their second attempt.
      const list = await settle(b, id, (l) => l.length === next + 1 && l[0].attempts_count >= 1);
      assert.is(list[0].status, 'failed', EMBEDDED[next]);
      assert.is(list[0].last_attempt.http_status, null);
      assert.is(
        list[0].last_attempt.transport_error,
        'dns: rebind.example.test has no public address',
        EMBEDDED[next],
      );
    }
    assert.is(rcv.received.length, 0, 'no connection was made');
  } finally {
    sender.lookup = saved;
  }
});

p('no address and a private address: one message, no map of internal names', async ({ b }) => {
  await b.app.startWorkers();
  const sender = b.app.services.webhookDispatcher.sender;
  const saved = sender.lookup;
  sender.lookup = async (host: string) => {
    if (host === 'internal.example.test') return [{ address: '10.1.2.3', family: 4 }];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  };
  try {
    const errors: string[] = [];
    for (const host of ['internal.example.test', 'nowhere.example.test']) {
      const { id } = await createWebhook(b, `https://${host}/hooks`, {
        event_types: ['user.created'],
      });
      await createUser(b);
      const [d] = await settle(b, id, (l) => l.length === 1 && l[0].attempts_count === 1);
      errors.push(d.last_attempt.transport_error.replace(host, 'HOST'));
      await b.api('DELETE', `${W}/${id}`);
    }
    assert.equal(errors, ['dns: HOST has no public address', 'dns: HOST has no public address']);
  } finally {
    sender.lookup = saved;
  }
});

t.run();
p.run();
