// engine: any
// The pure parts of webhook delivery: which addresses count as private, which URLs may be
// registered, and how a response excerpt is masked and cut.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTarget, isPrivateAddress } from '../../src/domain/webhooks/targets.ts';
import { excerpt, maskSecrets } from '../../src/domain/webhooks/sender.ts';
import { sign } from '../../src/domain/webhooks/signature.ts';
import { Webhook } from 'standardwebhooks';

test('private, loopback, link-local and reserved addresses are private; public ones are not', () => {
  for (const a of [
    '127.0.0.1',
    '10.0.0.1',
    '172.16.5.4',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::a00:1',
    'not-an-address',
  ])
    assert.ok(isPrivateAddress(a), a);
  for (const a of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])
    assert.not.ok(isPrivateAddress(a), a);
});

test('registration accepts public http(s) URLs and normalizes them', () => {
  assert.is(
    checkTarget('HTTPS://Hooks.Example.com/a?b=1', false),
    'https://hooks.example.com/a?b=1',
  );
  assert.is(checkTarget('http://127.0.0.1:9000/x', true), 'http://127.0.0.1:9000/x');
  for (const url of ['http://127.1/', 'http://0x7f000001/', 'http://[::]/', 'http://LOCALHOST./'])
    assert.throws(() => checkTarget(url, false), /validation_failed/, url);
});

test('excerpts mask secrets and tokens and keep at most 1 KiB', () => {
  const masked = maskSecrets(
    'token=abc123&next=1 Authorization: Bearer abc.def-ghi {"password": "hunter2", "ok": "fine"} ' +
      'whsec_AAAABBBB sch_live_XYZ123 deadbeefdeadbeefdeadbeefdeadbeef00',
  );
  for (const s of ['abc123', 'abc.def-ghi', 'hunter2', 'AAAABBBB', 'XYZ123', 'deadbeefdeadbeef'])
    assert.not.ok(masked.includes(s), `${s} in ${masked}`);
  assert.ok(masked.includes('"ok": "fine"'));
  assert.ok(masked.includes('next=1'));
  const long = excerpt(Buffer.from('€'.repeat(1000)));
  assert.ok(Buffer.byteLength(long) <= 1024);
  assert.is(long, '€'.repeat(341), 'cut on a character boundary');
  assert.is(excerpt(Buffer.from('{"ok":true}')), '{"ok":true}');
});

test('signatures are what the standardwebhooks package computes', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const when = new Date(1_700_000_000_000);
  assert.is(
    sign(secret, 'evt_1', 1_700_000_000, '{"a":1}'),
    new Webhook(secret).sign('evt_1', when, '{"a":1}'),
  );
});

test.run();
