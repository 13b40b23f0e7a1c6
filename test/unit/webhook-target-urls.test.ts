// engine: any
// Which webhook URLs registration refuses, and what it says: each rule alone (a URL that breaks
// only that one), with the detail a client gets.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTarget, hostOf } from '../../src/domain/webhooks/targets.ts';

const FORMAT = 'Must be an absolute http or https URL.';

function refusal(url: string, allowPrivate = false) {
  try {
    checkTarget(url, allowPrivate);
  } catch (err: any) {
    assert.is(err.code, 'validation_failed', url);
    assert.is(err.details.length, 1, url);
    return err.details[0];
  }
  throw new Error(`${url} was accepted`);
}

test('not a URL, or not http(s): invalid_format', () => {
  for (const url of ['not a url', '/relative/path', 'ftp://hooks.example.com/', 'ws://a.example/'])
    assert.equal(refusal(url), { field: 'url', code: 'invalid_format', message: FORMAT }, url);
  assert.is(checkTarget('http://hooks.example.com/', false), 'http://hooks.example.com/');
});

test('a user name, a password or both: refused', () => {
  const detail = {
    field: 'url',
    code: 'invalid_format',
    message: 'Must not carry a user name or password.',
  };
  for (const url of [
    'https://user@hooks.example.com/',
    'https://:secret@hooks.example.com/',
    'https://user:secret@hooks.example.com/',
  ])
    assert.equal(refusal(url, true), detail, url);
});

test('a fragment: refused', () => {
  assert.equal(refusal('https://hooks.example.com/a#b', true), {
    field: 'url',
    code: 'invalid_format',
    message: 'Must not carry a fragment (#...).',
  });
});

test('localhost by any spelling is private; names that only contain it are not', () => {
  const detail = {
    field: 'url',
    code: 'private_target',
    message: 'Private, loopback and link-local addresses cannot receive webhooks.',
  };
  for (const url of [
    'http://localhost/',
    'http://LocalHost../',
    'http://api.localhost/',
    'http://a.b.localhost./',
    'http://[::1]/',
    'http://10.1.2.3/',
  ])
    assert.equal(refusal(url), detail, url);
  for (const url of [
    'http://localhost.example.com/',
    'http://notlocalhost/',
    'http://localhostx/',
    'http://.localhost.example/',
    'http://my.local.host/',
    'http://hooks.example.com./',
    'http://[2606:4700::1111]/',
  ])
    assert.is(checkTarget(url, false), new URL(url).href, url);
  // Allowed on request (development, tests): every private target.
  assert.is(checkTarget('http://localhost:3000/h', true), 'http://localhost:3000/h');
  assert.is(checkTarget('http://[::1]:3000/h', true), 'http://[::1]:3000/h');
});

test('hostOf strips the brackets of an IPv6 host only', () => {
  assert.is(hostOf(new URL('http://[::1]:80/')), '::1');
  assert.is(hostOf(new URL('http://[2001:db8::5]/')), '2001:db8::5');
  assert.is(hostOf(new URL('http://hooks.example.com/')), 'hooks.example.com');
});

test.run();
