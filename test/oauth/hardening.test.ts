// Defects found by probing the running server: concurrency against the sign-in throttle, refresh
// and code reuse detection and TOTP replay protection, and a malformed Host header.
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Booted } from '../helpers/app.ts';
import {
  Browser,
  approve,
  bootOAuth,
  field,
  human,
  login,
  newPkce,
  setupAdmin,
  tokenRequest,
  totp,
  type Admin,
} from './helpers.ts';

const t = suite<{ b: Booted }>('oauth hardening');
t.before(async (ctx) => {
  ctx.b = await bootOAuth();
});
t.after(async (ctx) => ctx.b.close());

/** Sends the same request `n` times at once and returns the statuses, in order. */
async function parallel(n: number, send: (i: number) => Promise<{ status: number }>) {
  return (await Promise.all(Array.from({ length: n }, (_, i) => send(i)))).map((r) => r.status);
}

const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

/** One sign-in form (and its CSRF cookie) posted many times. */
async function passwordForm(browser: Browser) {
  const page = await browser.get('/admin/sign-in');
  const csrf = field(page.text, 'csrf');
  return (email: string, password: string) =>
    browser.post('/admin/sign-in', { csrf, return_to: '/admin', email, password });
}

/** The human-mode answer to an access token and the token endpoint's to a refresh token. */
async function tokenState(b: Booted, admin: Admin, tokens: any) {
  const call = await b.api(
    'GET',
    '/api/v3/credentials/current',
    human(admin.credentialSecret, tokens.access_token),
  );
  const refresh = await tokenRequest(b, {
    grant_type: 'refresh_token',
    client_id: 'service-cli',
    refresh_token: tokens.refresh_token,
  });
  return { call: call.status, callError: call.body?.error?.code, refresh: refresh.body.error };
}

// Each throttle test boots its own server: the per-address counter must start at zero.
t('parallel wrong passwords for one email: 5 are checked, the rest get 429', async () => {
  const b = await bootOAuth();
  try {
    const admin = await setupAdmin(b);
    const post = await passwordForm(new Browser(b.url));
    const statuses = await parallel(40, (i) => post(admin.email, `wrong-${i}`));
    assert.is(count(statuses, 401) + count(statuses, 429), 40, String(statuses));
    assert.is(count(statuses, 401), 5, String(statuses));
    // The block holds for the right password too.
    assert.is((await post(admin.email, admin.password)).status, 429);
  } finally {
    await b.close();
  }
});

t('parallel wrong passwords from one address: 30 are checked, the rest get 429', async () => {
  const b = await bootOAuth();
  try {
    const post = await passwordForm(new Browser(b.url));
    const statuses = await parallel(45, (i) => post(`nobody${i}@school.test`, 'wrong'));
    assert.is(count(statuses, 401) + count(statuses, 429), 45, String(statuses));
    assert.is(count(statuses, 401), 30, String(statuses));
  } finally {
    await b.close();
  }
});

t('a right password gives its attempt back to the address', async () => {
  const b = await bootOAuth();
  try {
    const admin = await setupAdmin(b);
    const post = await passwordForm(new Browser(b.url));
    const wrong = (n: number, from: number) =>
      parallel(n, (i) => post(`nobody${from + i}@school.test`, 'wrong'));
    assert.is(count(await wrong(25, 0), 401), 25);
    for (let i = 0; i < 10; i++) assert.is((await post(admin.email, admin.password)).status, 303);
    // 25 wrong + 10 right: only the wrong ones count, so exactly 5 more are checked.
    const statuses = await wrong(8, 25);
    assert.is(count(statuses, 401), 5, String(statuses));
    assert.is(count(statuses, 429), 3, String(statuses));
  } finally {
    await b.close();
  }
});

t('parallel wrong TOTP codes: 5 are checked, the rest get 429', async ({ b }) => {
  const admin = await setupAdmin(b);
  const browser = new Browser(b.url);
  const step1 = await (await passwordForm(browser))(admin.email, admin.password);
  assert.is(step1.status, 303);
  const csrf = field((await browser.get(step1.location!)).text, 'csrf');
  const right = totp(b, admin.totpSecret);
  const wrong = (i: number) => String((Number(right) + 1 + i) % 1_000_000).padStart(6, '0');
  const statuses = await parallel(30, (i) =>
    browser.post('/admin/sign-in/two-factor', { csrf, code: wrong(i) }),
  );
  assert.is(count(statuses, 401) + count(statuses, 429), 30, String(statuses));
  assert.is(count(statuses, 401), 5, String(statuses));
  assert.is((await browser.post('/admin/sign-in/two-factor', { csrf, code: right })).status, 429);
});

t('one TOTP code submitted by parallel sign-ins is accepted once', async ({ b }) => {
  const admin = await setupAdmin(b);
  const browsers = [1, 2, 3, 4].map(() => new Browser(b.url));
  const forms: string[] = [];
  for (const browser of browsers) {
    const step1 = await (await passwordForm(browser))(admin.email, admin.password);
    assert.is(step1.status, 303);
    forms.push(field((await browser.get(step1.location!)).text, 'csrf'));
  }
  const code = totp(b, admin.totpSecret);
  const statuses = await parallel(4, (i) =>
    browsers[i]!.post('/admin/sign-in/two-factor', { csrf: forms[i]!, code }),
  );
  assert.is(count(statuses, 303), 1, String(statuses));
  assert.is(count(statuses, 401), 3, String(statuses));
  const signedIn = await Promise.all(browsers.map(async (br) => (await br.get('/admin')).status));
  assert.equal(
    signedIn,
    statuses.map((s) => (s === 303 ? 200 : 303)),
  );
});

t(
  'parallel refreshes of one refresh token: one wins, and reuse revokes its tokens',
  async ({ b }) => {
    const admin = await setupAdmin(b);
    const browser = new Browser(b.url);
    // A few rounds: the race used to be lost every time, but one round proves little.
    for (let round = 0; round < 3; round++) {
      const { tokens } = await login(b, admin, browser);
      const answers = await Promise.all(
        [1, 2].map(() =>
          tokenRequest(b, {
            grant_type: 'refresh_token',
            client_id: 'service-cli',
            refresh_token: tokens.refresh_token!,
          }),
        ),
      );
      const won = answers.filter((a) => a.status === 200);
      const lost = answers.filter((a) => a.status !== 200);
      assert.is(won.length, 1, answers.map((a) => a.text).join('\n'));
      assert.is(lost[0]!.status, 400);
      assert.is(lost[0]!.body.error, 'invalid_grant');
      assert.equal(await tokenState(b, admin, won[0]!.body), {
        call: 401,
        callError: 'invalid_access_token',
        refresh: 'invalid_grant',
      });
    }
  },
);

t(
  'parallel exchanges of one code: one wins, and the second use revokes its tokens',
  async ({ b }) => {
    const admin = await setupAdmin(b);
    const browser = new Browser(b.url);
    await login(b, admin, browser);
    for (let round = 0; round < 3; round++) {
      const p = await newPkce();
      const code = (await approve(browser, p)).searchParams.get('code')!;
      const answers = await Promise.all(
        [1, 2].map(() =>
          tokenRequest(b, {
            grant_type: 'authorization_code',
            client_id: 'service-cli',
            code,
            code_verifier: p.verifier,
            redirect_uri: p.redirectUri,
          }),
        ),
      );
      const won = answers.filter((a) => a.status === 200);
      const lost = answers.filter((a) => a.status !== 200);
      assert.is(won.length, 1, answers.map((a) => a.text).join('\n'));
      assert.is(lost[0]!.status, 400);
      assert.is(lost[0]!.body.error, 'invalid_grant');
      assert.equal(await tokenState(b, admin, won[0]!.body), {
        call: 401,
        callError: 'invalid_access_token',
        refresh: 'invalid_grant',
      });
    }
  },
);

/** A request with a Host header fetch would refuse to send; status line, headers and body. */
function sendWithHost(b: Booted, method: string, path: string, host: string) {
  const { port } = new URL(b.url);
  return new Promise<{ status: number; head: string; body: string }>((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () =>
      socket.write(
        `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      ),
    );
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => (data += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n', 2);
      resolve({ status: Number(head.split(' ')[1]), head, body });
    });
  });
}

t('a malformed Host header is a 400, without a stack', async ({ b }) => {
  const pages = ['/admin/sign-in', '/admin/sign-in?return_to=/admin', '/admin/sign-in/two-factor'];
  for (const path of pages) {
    for (const host of ['[', 'a b', 'school.test:port']) {
      const res = await sendWithHost(b, 'GET', path, host);
      assert.is(res.status, 400, `${path} ${host}`);
      assert.match(res.head, /content-type: text\/html/i);
      assert.match(res.body, /Host header/);
      assert.not.match(res.body, /Error|\bat .*\(/);
    }
  }
  const token = await sendWithHost(b, 'POST', '/oauth/token', '[');
  assert.is(token.status, 400);
  assert.equal(JSON.parse(token.body).error, 'invalid_request');
  // A well-formed Host, whatever its name, still gets the page.
  assert.is((await sendWithHost(b, 'GET', '/admin/sign-in', 'school.test:8080')).status, 200);
});

t.run();
