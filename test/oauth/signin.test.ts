// Administrator sign-in pages: cookies, CSRF, two-factor, throttling, sign-out, localization.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Booted } from '../helpers/app.ts';
import { Browser, bootOAuth, field, setupAdmin, signIn, totp, type Admin } from './helpers.ts';

const t = suite<{ b: Booted }>('oauth sign-in');
t.before(async (ctx) => {
  ctx.b = await bootOAuth();
});
t.after(async (ctx) => ctx.b.close());

async function passwordStep(browser: Browser, admin: Admin, password = admin.password) {
  const page = await browser.get('/admin/sign-in');
  return browser.post('/admin/sign-in', {
    csrf: field(page.text, 'csrf'),
    return_to: '/admin',
    email: admin.email,
    password,
  });
}

t(
  'pages are plain HTML with a stylesheet, no script, localized by Accept-Language',
  async ({ b }) => {
    const expected: [string, string, string][] = [
      ['pt-BR,pt;q=0.9', 'pt-BR', 'Acesso do administrador'],
      ['es', 'es-ES', 'Acceso de administrador'],
      ['fr-FR', 'fr-FR', 'Connexion administrateur'],
      ['de-DE', 'en-US', 'Administrator sign-in'],
    ];
    for (const [header, locale, title] of expected) {
      const res = await new Browser(b.url, { 'accept-language': header }).get('/admin/sign-in');
      assert.is(res.status, 200);
      assert.ok(res.text.includes(`<html lang="${locale}">`), header);
      assert.ok(res.text.includes(title), header);
      assert.is(res.headers.get('content-language'), locale);
      assert.is(res.text.includes('<script'), false);
      assert.match(res.text, /href="\/admin\/style.css"/);
    }
    const css = await fetch(`${b.url}/admin/style.css`);
    assert.is(css.status, 200);
    assert.match(css.headers.get('content-type')!, /^text\/css/);
  },
);

t('full sign-in: HttpOnly SameSite=Lax cookies (not Secure over http)', async ({ b }) => {
  const admin = await setupAdmin(b);
  const browser = new Browser(b.url);
  assert.is(await signIn(b, browser, admin), '/admin');
  for (const line of browser.setCookieHeaders) {
    assert.match(line, /; HttpOnly/);
    assert.match(line, /; SameSite=Lax/);
    assert.is(/; Secure/.test(line), false);
  }
  const home = await browser.get('/admin');
  assert.is(home.status, 200);
  assert.ok(home.text.includes(admin.email));
});

t('TOTP secrets are stored sealed; a row stored in clear before still signs in', async ({ b }) => {
  const admin = await setupAdmin(b);
  const row = await b.app.db('administrators').where('id', admin.adminId).first();
  assert.match(row.totp_secret, /^v1\./);
  assert.not.ok(row.totp_secret.includes(admin.totpSecret));
  assert.is(await signIn(b, new Browser(b.url), admin), '/admin');

  await b.app
    .db('administrators')
    .where('id', admin.adminId)
    .update({ totp_secret: admin.totpSecret });
  assert.is(await signIn(b, new Browser(b.url), admin), '/admin');
});

t('over https the cookies are Secure with the __Host- prefix', async () => {
  const b = await bootOAuth({ env: { PUBLIC_BASE_URL: 'https://school.example' } });
  try {
    const admin = await setupAdmin(b);
    const browser = new Browser(b.url);
    await passwordStep(browser, admin);
    assert.ok(browser.setCookieHeaders.length >= 2);
    for (const line of browser.setCookieHeaders) {
      assert.match(line, /^__Host-school_/);
      assert.match(line, /; Secure/);
      assert.match(line, /; HttpOnly/);
      assert.match(line, /; SameSite=Lax/);
    }
  } finally {
    await b.close();
  }
});

t('wrong password and unknown email get the same answer', async ({ b }) => {
  const admin = await setupAdmin(b);
  const wrong = await passwordStep(new Browser(b.url), admin, 'wrong');
  const unknown = await passwordStep(new Browser(b.url), { ...admin, email: 'nobody@school.test' });
  assert.is(wrong.status, 401);
  assert.is(unknown.status, 401);
  assert.match(wrong.text, /email or password is incorrect/);
  assert.match(unknown.text, /email or password is incorrect/);
});

t('every form needs its CSRF token', async ({ b }) => {
  const admin = await setupAdmin(b);
  const browser = new Browser(b.url);
  await browser.get('/admin/sign-in');
  const noToken = await browser.post('/admin/sign-in', {
    email: admin.email,
    password: admin.password,
  });
  assert.is(noToken.status, 403);
  assert.is(browser.cookies.has('school_admin'), false);
  // A token from another browser does not fit this one's cookie.
  const other = await new Browser(b.url).get('/admin/sign-in');
  const stolen = await browser.post('/admin/sign-in', {
    csrf: field(other.text, 'csrf'),
    email: admin.email,
    password: admin.password,
  });
  assert.is(stolen.status, 403);

  assert.is((await passwordStep(browser, admin)).status, 303);
  const code = await browser.post('/admin/sign-in/two-factor', { code: totp(b, admin.totpSecret) });
  assert.is(code.status, 403);

  b.clock.advance(30_000);
  const signedIn = new Browser(b.url);
  await signIn(b, signedIn, admin);
  const signOut = await signedIn.post('/admin/sign-out', {});
  assert.is(signOut.status, 403);
  assert.is((await signedIn.get('/admin')).status, 200);
});

t('two-factor: a wrong code fails, a used code is not accepted twice', async ({ b }) => {
  const admin = await setupAdmin(b);
  const browser = new Browser(b.url);
  const step1 = await passwordStep(browser, admin);
  assert.is(step1.status, 303);
  assert.match(step1.location!, /^\/admin\/sign-in\/two-factor/);
  // Password alone is not signed in.
  assert.is((await browser.get('/admin')).status, 303);
  const page = await browser.get(step1.location!);
  const code = totp(b, admin.totpSecret);
  const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
  const bad = await browser.post('/admin/sign-in/two-factor', {
    csrf: field(page.text, 'csrf'),
    code: wrong,
  });
  assert.is(bad.status, 401);
  assert.match(bad.text, /not valid/);
  const good = await browser.post('/admin/sign-in/two-factor', {
    csrf: field(page.text, 'csrf'),
    code,
  });
  assert.is(good.status, 303);

  // Same code, second browser, same 30-second step: replay.
  const second = new Browser(b.url);
  const s1 = await passwordStep(second, admin);
  const p2 = await second.get(s1.location!);
  const replay = await second.post('/admin/sign-in/two-factor', {
    csrf: field(p2.text, 'csrf'),
    code,
  });
  assert.is(replay.status, 401);
});

t('two-factor page without a password step goes back to sign-in', async ({ b }) => {
  const res = await new Browser(b.url).get('/admin/sign-in/two-factor');
  assert.is(res.status, 303);
  assert.match(res.location!, /^\/admin\/sign-in\?/);
});

t('brute force is throttled: passwords and codes', async ({ b }) => {
  const admin = await setupAdmin(b);
  const browser = new Browser(b.url);
  for (let i = 0; i < 5; i++)
    assert.is((await passwordStep(browser, admin, `wrong-${i}`)).status, 401);
  const blocked = await passwordStep(browser, admin);
  assert.is(blocked.status, 429);
  assert.ok(Number(blocked.headers.get('retry-after')) > 0);
  assert.match(blocked.text, /Too many attempts/);

  const other = await setupAdmin(b);
  const b2 = new Browser(b.url);
  const s1 = await passwordStep(b2, other);
  const page = await b2.get(s1.location!);
  const csrf = field(page.text, 'csrf');
  for (let i = 0; i < 5; i++)
    assert.is((await b2.post('/admin/sign-in/two-factor', { csrf, code: '000000' })).status, 401);
  const right = await b2.post('/admin/sign-in/two-factor', {
    csrf,
    code: totp(b, other.totpSecret),
  });
  assert.is(right.status, 429);
});

t('return_to never leaves the site', async ({ b }) => {
  const admin = await setupAdmin(b);
  for (const target of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
    const browser = new Browser(b.url);
    assert.is(await signIn(b, browser, admin, target), '/admin');
  }
  const twice = await new Browser(b.url).get('/admin/sign-in?return_to=/a&return_to=/b');
  assert.is(twice.status, 200);
});

t('sign-out ends the session', async ({ b }) => {
  const admin = await setupAdmin(b);
  const browser = new Browser(b.url);
  await signIn(b, browser, admin);
  const home = await browser.get('/admin');
  const out = await browser.post('/admin/sign-out', { csrf: field(home.text, 'csrf') });
  assert.is(out.status, 303);
  assert.match(out.location!, /signed_out=1/);
  assert.is(browser.cookies.has('school_admin'), false);
  const notice = await browser.get(out.location!);
  assert.match(notice.text, /You have signed out/);
  assert.is((await browser.get('/admin')).status, 303);
});

t.run();
