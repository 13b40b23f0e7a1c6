// engine: any
// The IPv4 address an IPv6 address embeds or routes to (src/domain/webhooks/targets.ts): each
// form decoded to the exact address, the forms that embed nothing, and text that is not an
// IPv6 address at all. isPrivateAddress refuses an IPv6 address whose embedded IPv4 is private
// even where no IPv6 range of the block list covers it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTarget, embeddedIpv4, isPrivateAddress } from '../../src/domain/webhooks/targets.ts';

test('each embedding form decodes to its IPv4 address', () => {
  const cases: [string, string[]][] = [
    ['::7f00:1', ['127.0.0.1']], // IPv4-compatible (::/96)
    ['::169.254.169.254', ['169.254.169.254']], // the same, dotted
    ['::ffff:7f00:1', ['127.0.0.1']], // IPv4-mapped
    ['::FFFF:A9FE:A9FE', ['169.254.169.254']], // upper-case hex
    ['::ffff:192.168.100.200', ['192.168.100.200']], // mapped, dotted (three-digit octets)
    ['0:0:0:0:0:ffff:10.0.0.1', ['10.0.0.1']], // no `::`
    ['::ffff:0:7f00:1', ['127.0.0.1']], // SIIT-translated (::ffff:0:0/96)
    ['::ffff:0:172.16.0.1', ['172.16.0.1']],
    ['64:ff9b::a00:1', ['10.0.0.1']], // NAT64
    ['64:ff9b:1::a00:1', ['10.0.0.1']], // local-use NAT64: the last 32 bits
    ['2002:7f00:1::', ['127.0.0.1']], // 6to4: bits 16-47
    ['2002:a9fe:a9fe:1:2:3:4:5', ['169.254.169.254']],
    // Teredo: the server, then the client's address stored inverted.
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', ['65.54.227.120', '192.0.2.45']],
  ];
  for (const [address, expected] of cases) assert.equal(embeddedIpv4(address), expected, address);
});

test('addresses that embed nothing, and text that is no IPv6 address', () => {
  for (const address of [
    '2606:4700::1111', // public, nothing embedded
    '1::ffff:7f00:1', // not all zeros before the mapped prefix
    '0:0:0:0:1:ffff:7f00:1', // a one in the fifth group
    '::ffff:1:7f00:1', // SIIT needs a zero sixth group
    '::1:0:7f00:1', // neither mapped nor SIIT
    '::1234:7f00:1', // zeros, then a sixth group that is neither 0 nor ffff
    '64:ff9c::a00:1', // next to NAT64, not it
    '65:ff9b::a00:1',
    '2003:7f00:1::', // next to 6to4
    '2001:1:4136:e378:8000:63bf:3fff:fdd2', // next to Teredo (2001:0::/32)
    '3001:0:4136:e378:8000:63bf:3fff:fdd2',
    '::ffff:1.2.3.999', // a dotted tail that is not IPv4
    '::ffff::7f00:1', // two `::`
    '0:0:0:0:0:ffff:7f00:1:1', // nine groups
    '0:0:0:0:ffff:7f00:1', // seven groups
    '::ffff:10000:1', // a group past 16 bits
    '::ffff:-1:1', // a negative group
    '::ffff:zz:1', // not hex
    '127.0.0.1', // IPv4 itself: nothing embedded
    '',
  ])
    assert.equal(embeddedIpv4(address), [], address);
});

test('a private embedded IPv4 makes the IPv6 address private, a public one does not', () => {
  // 6to4 and Teredo are in no IPv6 range of the block list: only the decoded address decides.
  for (const address of [
    '2002:7f00:1::',
    '2002:a00:1::1',
    '2001:0:4136:e378:8000:63bf:80ff:fffe', // Teredo client 127.0.0.1
    '2001:0:a00:1::1', // Teredo server 10.0.0.1
  ])
    assert.ok(isPrivateAddress(address), address);
  for (const address of ['2002:808:808::1', '2001:0:4136:e378:8000:63bf:f7f7:f7f7'])
    assert.not.ok(isPrivateAddress(address), address);
  assert.throws(() => checkTarget('http://[2002:7f00:1::]/hooks', false), /validation_failed/);
  assert.is(checkTarget('http://[2002:808:808::1]/hooks', false), 'http://[2002:808:808::1]/hooks');
});

test('port 0: refused with the port rule, not taken as the default port', () => {
  try {
    checkTarget('https://hooks.example.com:0/x', true);
    assert.unreachable('port 0 was accepted');
  } catch (err: any) {
    assert.is(err.code, 'validation_failed');
    assert.equal(err.details, [
      { field: 'url', code: 'invalid_format', message: 'The port must be between 1 and 65535.' },
    ]);
  }
  assert.is(checkTarget('https://hooks.example.com:1/x', false), 'https://hooks.example.com:1/x');
});

test.run();
