// engine: any
// Webhook signing: each delivery carries one Standard Webhooks signature per active secret, each
// verifiable on its own with the standardwebhooks package; new secrets are 32 random bytes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Webhook } from 'standardwebhooks';
import {
  newSigningSecret,
  SECRET_PREFIX,
  sign,
  signedHeaders,
} from '../../src/domain/webhooks/signature.ts';

test('every active secret signs; each signature verifies alone', () => {
  const [a, b] = [newSigningSecret(), newSigningSecret()];
  const body = '{"type":"user.created"}';
  const at = 1_700_000_123;
  const headers = signedHeaders([a, b], 'evt_9', at, body);
  assert.equal(Object.keys(headers).sort(), [
    'webhook-id',
    'webhook-signature',
    'webhook-timestamp',
  ]);
  assert.is(headers['webhook-id'], 'evt_9');
  assert.is(headers['webhook-timestamp'], String(at));
  const sigs = headers['webhook-signature']!.split(' ');
  assert.equal(sigs, [sign(a, 'evt_9', at, body), sign(b, 'evt_9', at, body)]);
  const now = Date.now;
  Date.now = () => at * 1000; // the library refuses timestamps far from its clock
  try {
    for (const secret of [a, b]) {
      const ok = new Webhook(secret).verify(body, headers);
      assert.equal(ok, { type: 'user.created' });
    }
    assert.throws(() => new Webhook(newSigningSecret()).verify(body, headers));
    assert.throws(() => new Webhook(a).verify(body + ' ', headers));
  } finally {
    Date.now = now;
  }
  assert.is(signedHeaders([], 'evt_9', at, body)['webhook-signature'], '');
});

test('a signature covers the id, the timestamp and the body', () => {
  const s = newSigningSecret();
  const base = sign(s, 'evt_1', 100, 'x');
  assert.match(base, /^v1,[A-Za-z0-9+/]{43}=$/);
  assert.is.not(sign(s, 'evt_2', 100, 'x'), base);
  assert.is.not(sign(s, 'evt_1', 101, 'x'), base);
  assert.is.not(sign(s, 'evt_1', 100, 'y'), base);
  assert.is(sign(s, 'evt_1', 100, 'x'), base);
});

test('new secrets: whsec_ and 32 random bytes, never the same', () => {
  const secrets = Array.from({ length: 20 }, newSigningSecret);
  assert.is(new Set(secrets).size, 20);
  for (const s of secrets) {
    assert.ok(s.startsWith(SECRET_PREFIX), s);
    assert.is(Buffer.from(s.slice(SECRET_PREFIX.length), 'base64').length, 32);
  }
});

test.run();
