// A real browser (Debian's Chromium, headless, driven by playwright-core): sign in, two-factor,
// approve, and land on a callback served by this test on 127.0.0.1. Without /usr/bin/chromium
// the test says so loudly and passes; the rest of the suite does not depend on it.
import http from 'node:http';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as oauth from 'oauth4webapi';
import type { Booted } from '../helpers/app.ts';
import { withBrowser } from '../helpers/browser.ts';
import {
  CLIENT,
  INSECURE,
  authorizePath,
  bootOAuth,
  discover,
  human,
  newPkce,
  setupAdmin,
  totp,
} from './helpers.ts';

const t = suite<{ b: Booted }>('oauth browser');
t.before(async (ctx) => {
  ctx.b = await bootOAuth();
});
t.after(async (ctx) => ctx.b.close());

/** A loopback "client": the first /callback request's URL. */
async function callbackServer() {
  let resolve!: (url: URL) => void;
  const received = new Promise<URL>((r) => (resolve = r));
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, `http://${req.headers.host}`);
    if (url.pathname !== '/callback') return void res.writeHead(404).end();
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end('<title>Callback</title><h1>Callback reached</h1>');
    resolve(url);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port, received };
}

t('sign in, two-factor, approve, callback (headless Chromium)', async ({ b }) => {
  const admin = await setupAdmin(b);
  const cb = await callbackServer();
  const p = await newPkce(`http://127.0.0.1:${cb.port}/callback`);
  await withBrowser({ locale: 'pt-BR' }, async (context) => {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(b.url + authorizePath(p));
    assert.match(new URL(page.url()).pathname, /^\/admin\/sign-in$/);
    // Localized from the browser's Accept-Language.
    assert.is(await page.locator('h1').textContent(), 'Acesso do administrador');
    await page.fill('input[name=email]', admin.email);
    await page.fill('input[name=password]', admin.password);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/admin\/sign-in\/two-factor/);
    b.clock.advance(30_000);
    await page.fill('input[name=code]', totp(b, admin.totpSecret));
    await page.click('button[type=submit]');
    await page.waitForURL(/\/oauth\/authorize\?/);
    assert.ok((await page.content()).includes(admin.email));
    await page.click('button[value=approve]');
    const callback = await cb.received;
    await page.waitForURL(/127\.0\.0\.1:\d+\/callback/);
    assert.is(await page.locator('h1').textContent(), 'Callback reached');

    // The browser's cookies are what the server set: HttpOnly, SameSite=Lax.
    const cookie = (await context.cookies(b.url)).find((c) => c.name === 'school_admin');
    assert.ok(cookie);
    assert.is(cookie!.httpOnly, true);
    assert.is(cookie!.sameSite, 'Lax');

    const as = await discover(b);
    const params = oauth.validateAuthResponse(as, CLIENT, callback, p.state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      CLIENT,
      await oauth.authorizationCodeGrantRequest(
        as,
        CLIENT,
        oauth.None(),
        params,
        p.redirectUri,
        p.verifier,
        INSECURE,
      ),
    );
    const me = await b.api(
      'GET',
      '/api/v3/credentials/current',
      human(admin.credentialSecret, tokens.access_token),
    );
    assert.is(me.status, 200);
    assert.is(me.body.data.human.admin_id, String(admin.adminId));
  }).finally(() => cb.server.close());
});

t.run();
