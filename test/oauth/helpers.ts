// Shared by the OAuth suites: an app whose issuer is its real URL, an administrator linked to a
// credential, a cookie-keeping "browser" built on fetch, and the sign-in + consent dance.
import * as oauth from 'oauth4webapi';
import { generateSync } from 'otplib';
import { SignJWT, importJWK } from 'jose';
import { loadConfig } from '../../src/config.ts';
import { loadSecretsKey, unseal } from '../../src/secrets-key.ts';
import type { AuthMode } from '../../src/domain/credentials/repo.ts';
import { boot, type BootOptions, type Booted } from '../helpers/app.ts';

export const CLIENT = { client_id: 'service-cli' };
export const INSECURE = { [oauth.allowInsecureRequests]: true };

/** boot() already serves on the URL it announces as PUBLIC_BASE_URL (the OAuth issuer). */
export const bootOAuth = (options: BootOptions = {}): Promise<Booted> => boot(options);

export interface Admin {
  adminId: number;
  email: string;
  password: string;
  totpSecret: string;
  credentialId: number;
  credentialSecret: string;
}

let adminCounter = 0;

/** An administrator of the booted account, linked to a fresh credential with this auth mode. */
export async function setupAdmin(
  b: Booted,
  options: { authMode?: AuthMode; accountId?: number; link?: boolean } = {},
): Promise<Admin> {
  const accounts = b.app.services.accounts;
  const accountId = options.accountId ?? b.accountId;
  const email = `admin${++adminCounter}-${process.pid}@school.test`;
  const password = `correct horse ${adminCounter}`;
  const admin = await accounts.createAdmin({ accountId, email, password });
  const credential = await accounts.createRootCredential({
    accountId,
    permissions: ['*'],
    authMode: options.authMode ?? 'both',
  });
  if (options.link !== false) await accounts.linkAdmin(admin.id, credential.id);
  return {
    adminId: admin.id,
    email,
    password,
    totpSecret: admin.totpSecret,
    credentialId: credential.id,
    credentialSecret: credential.secret,
  };
}

/** A TOTP code for the server's (test) clock. */
export function totp(b: Booted, secret: string): string {
  return generateSync({ secret, epoch: Math.floor(b.clock.now().getTime() / 1000) });
}

/** fetch with a cookie jar and no automatic redirects, like a browser seen from the server. */
export class Browser {
  readonly cookies = new Map<string, string>();
  readonly setCookieHeaders: string[] = [];
  readonly base: string;
  readonly headers: Record<string, string>;

  constructor(base: string, headers: Record<string, string> = {}) {
    this.base = base;
    this.headers = headers;
  }

  async request(path: string, init: { method?: string; form?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...this.headers };
    if (this.cookies.size)
      headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const url = path.startsWith('http') ? path : this.base + path;
    const res = await fetch(url, {
      method: init.method ?? 'GET',
      headers,
      body,
      redirect: 'manual',
    });
    for (const line of res.headers.getSetCookie()) {
      this.setCookieHeaders.push(line);
      const [pair, ...attrs] = line.split(';');
      const [name, value] = [
        pair!.slice(0, pair!.indexOf('=')),
        pair!.slice(pair!.indexOf('=') + 1),
      ];
      if (attrs.some((a) => a.trim().toLowerCase() === 'max-age=0')) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      text,
      location: res.headers.get('location'),
    };
  }

  get(path: string) {
    return this.request(path);
  }

  post(path: string, form: Record<string, string>) {
    return this.request(path, { method: 'POST', form });
  }
}

/** The value of a hidden field in a page. */
export function field(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!m) throw new Error(`no field ${name} in page:\n${html}`);
  return m[1]!
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
}

/** Signs in with password and TOTP; returns where the server sent the browser afterwards. */
export async function signIn(b: Booted, browser: Browser, admin: Admin, returnTo = '/admin') {
  const form = await browser.get(`/admin/sign-in?${new URLSearchParams({ return_to: returnTo })}`);
  const step1 = await browser.post('/admin/sign-in', {
    csrf: field(form.text, 'csrf'),
    return_to: returnTo,
    email: admin.email,
    password: admin.password,
  });
  if (step1.status !== 303) throw new Error(`sign-in failed: ${step1.status}\n${step1.text}`);
  const page = await browser.get(step1.location!);
  // A TOTP code is accepted once: each sign-in moves to the next 30-second step.
  b.clock.advance(30_000);
  const step2 = await browser.post('/admin/sign-in/two-factor', {
    csrf: field(page.text, 'csrf'),
    return_to: field(page.text, 'return_to'),
    code: totp(b, admin.totpSecret),
  });
  if (step2.status !== 303) throw new Error(`two-factor failed: ${step2.status}\n${step2.text}`);
  return step2.location!;
}

export interface Pkce {
  verifier: string;
  challenge: string;
  state: string;
  redirectUri: string;
}

export async function newPkce(redirectUri = 'http://127.0.0.1:45678/callback'): Promise<Pkce> {
  const verifier = oauth.generateRandomCodeVerifier();
  return {
    verifier,
    challenge: await oauth.calculatePKCECodeChallenge(verifier),
    state: oauth.generateRandomState(),
    redirectUri,
  };
}

export function authorizePath(p: Pkce, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: 'service-cli',
    redirect_uri: p.redirectUri,
    code_challenge: p.challenge,
    code_challenge_method: 'S256',
    state: p.state,
    ...extra,
  });
  return `/oauth/authorize?${q}`;
}

/** Authorize as a signed-in browser: consent page, Approve, and the loopback redirect URL. */
export async function approve(browser: Browser, p: Pkce): Promise<URL> {
  const consent = await browser.get(authorizePath(p));
  if (consent.status !== 200)
    throw new Error(`consent page: ${consent.status} ${consent.location}`);
  const res = await browser.post(authorizePath(p), {
    csrf: field(consent.text, 'csrf'),
    decision: 'approve',
  });
  if (res.status !== 303) throw new Error(`approve: ${res.status}\n${res.text}`);
  return new URL(res.location!);
}

export async function discover(b: Booted): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(b.url);
  return oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { ...INSECURE, algorithm: 'oauth2' }),
  );
}

/** The whole login of an administrator with oauth4webapi; returns the token response. */
export async function login(b: Booted, admin: Admin, browser = new Browser(b.url)) {
  const as = await discover(b);
  if (!browser.cookies.size) await signIn(b, browser, admin);
  const p = await newPkce();
  const callback = await approve(browser, p);
  const params = oauth.validateAuthResponse(as, CLIENT, callback, p.state);
  const res = await oauth.authorizationCodeGrantRequest(
    as,
    CLIENT,
    oauth.None(),
    params,
    p.redirectUri,
    p.verifier,
    INSECURE,
  );
  const tokens = await oauth.processAuthorizationCodeResponse(as, CLIENT, res);
  return { as, browser, tokens };
}

/** Human-mode headers: the credential as X-API-Key, the administrator's token as bearer. */
export function human(credentialSecret: string, accessToken: string) {
  return {
    secret: null,
    headers: { 'x-api-key': credentialSecret, authorization: `Bearer ${accessToken}` },
  };
}

/** POST a form to the token endpoint, as raw as a misbehaving client would. */
export async function tokenRequest(b: Booted, form: Record<string, string>, path = '/oauth/token') {
  const res = await fetch(b.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    body: text ? JSON.parse(text) : undefined,
  };
}

/** The server's current signing key (private), read the way the server reads it. */
export async function serverSigningKey(b: Booted, kid?: string) {
  const row = kid
    ? await b.app.db('oauth_signing_keys').where('kid', kid).first()
    : await b.app
        .db('oauth_signing_keys')
        .whereNull('retired_at')
        .orderBy('created_at', 'desc')
        .first();
  const config = loadConfig({ DATABASE_URL: b.database.url });
  const jwk = JSON.parse(unseal(loadSecretsKey(config), row.private_jwk_sealed, row.kid));
  return { kid: row.kid as string, key: await importJWK(jwk, 'RS256') };
}

/** A JWT with these header and claims, signed by `key` (the server's or a stranger's). */
export async function forge(
  key: Awaited<ReturnType<typeof serverSigningKey>>['key'] | CryptoKey,
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', ...header }).sign(key);
}
