// engine: any
// The webhook sender (src/domain/webhooks/sender.ts): the body goes out as its UTF-8 bytes with
// their length; a receiver that never answers, or answers and then stalls its body, is a transport
// error once the timeout has passed (as when the timeout was an AbortSignal given to
// http.request); one that answers in time leaves no timer behind. Real receivers on 127.0.0.1;
// the timeout shortened to 300 ms.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../src/clock.ts';
import { WebhookSender } from '../../src/domain/webhooks/sender.ts';

async function receiver(handler: http.RequestListener) {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return {
    url,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** The attempt's result, or a failure when it is still pending after 5 s (no timeout fired). */
const within = <T>(p: Promise<T>) =>
  Promise.race([
    p,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('no timeout fired')), 5000),
    ),
  ]);

const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' };

/**
 * Sends one attempt to a receiver that handles it so; the attempt must end as a timeout. `then`
 * runs before the receiver closes (which would close the connection itself).
 */
async function timesOut(handler: http.RequestListener, then?: () => Promise<unknown>) {
  const rcv = await receiver(handler);
  const sender = new WebhookSender(systemClock, true, 300);
  try {
    const r = await within(sender.send(rcv.url, headers, '{}'));
    assert.is(r.httpStatus, null);
    assert.is(r.transportError, 'timeout: no response within 0.3 s'); // this sender's 300 ms
    assert.ok(r.durationMs >= 250 && r.durationMs < 5000, `took ${r.durationMs} ms`);
    if (then) await within(then());
  } finally {
    sender.close();
    rcv.close();
  }
}

test('no answer within the timeout: a transport error, the connection dropped', async () => {
  let closed!: Promise<void>;
  await timesOut(
    (req) => {
      req.resume();
      closed = new Promise((resolve) => req.socket.on('close', () => resolve()));
    },
    // The sender destroyed its request: the receiver sees the connection close.
    () => closed,
  );
});

test('an answer whose body stalls past the timeout is a timeout too', () =>
  timesOut((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('partial');
  }));

test('an answer in time: no timeout fires afterwards', async () => {
  const rcv = await receiver((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  const sender = new WebhookSender(systemClock, true, 300);
  try {
    const first = await sender.send(rcv.url, headers, '{}');
    assert.is(first.httpStatus, 204);
    // Past the first attempt's timeout, the kept-alive connection still serves the next one.
    await new Promise((res) => setTimeout(res, 400));
    const second = await sender.send(rcv.url, headers, '{}');
    assert.is(second.httpStatus, 204);
    assert.is(second.transportError, null);
  } finally {
    sender.close();
    rcv.close();
  }
});

test('the body arrives as its UTF-8 bytes, with their length', async () => {
  const got: { length?: string; bytes?: Buffer } = {};
  const rcv = await receiver((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.length = req.headers['content-length'];
      got.bytes = Buffer.concat(chunks);
      res.writeHead(204).end();
    });
  });
  const sender = new WebhookSender(systemClock, true, 300);
  // Accents, an emoji (a surrogate pair) and a lone surrogate (sent as U+FFFD, as Buffer.from does).
  const body = JSON.stringify({ name: 'Zoë Ångström 🎓', odd: 'x\ud800y' });
  try {
    const r = await within(sender.send(rcv.url, headers, body));
    assert.is(r.httpStatus, 204);
    const expected = Buffer.from(body, 'utf8');
    assert.ok(got.bytes, 'the receiver got the request');
    assert.is(got.length, String(expected.length));
    assert.ok(got.bytes!.equals(expected), got.bytes!.toString('utf8'));
  } finally {
    sender.close();
    rcv.close();
  }
});

test.run();
