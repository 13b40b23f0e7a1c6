// Browser plumbing for the admin pages: cookies, CSRF tokens and form bodies.
import crypto from 'node:crypto';
import type { Context } from 'koa';
import { readBody } from '../http/body.ts';
import { AppError } from '../errors.ts';
import { keyObject } from '../domain/shared/keys.ts';

export interface CookieNames {
  session: string;
  csrf: string;
}

/** Over https the __Host- prefix makes the browser insist on Secure, Path=/ and no Domain. */
export function cookieNames(secure: boolean): CookieNames {
  return secure
    ? { session: '__Host-school_admin', csrf: '__Host-school_csrf' }
    : { session: 'school_admin', csrf: 'school_csrf' };
}

export function getCookie(ctx: Context, name: string): string | undefined {
  return ctx.cookies.get(name) || undefined;
}

/**
 * Written by hand: Koa refuses `secure` cookies when the request itself is plain http, which is
 * exactly the case behind a TLS-terminating proxy; the public base URL decides instead.
 */
export function setCookie(ctx: Context, name: string, value: string, secure: boolean): void {
  const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (secure) parts.push('Secure');
  ctx.append('Set-Cookie', parts.join('; '));
}

export function clearCookie(ctx: Context, name: string, secure: boolean): void {
  const parts = [`${name}=`, 'Path=/', 'HttpOnly', 'SameSite=Lax', 'Max-Age=0'];
  if (secure) parts.push('Secure');
  ctx.append('Set-Cookie', parts.join('; '));
}

/**
 * CSRF tokens are an HMAC of what the form is bound to: the session token once signed in, the
 * pre-session cookie on the sign-in form. Nothing to store, and useless to another browser.
 */
export function csrfToken(key: Buffer, binding: string): string {
  return crypto.createHmac('sha256', keyObject(key)).update(binding).digest('base64url');
}

export function csrfValid(key: Buffer, binding: string | undefined, token: string | null): boolean {
  if (!binding || !token) return false;
  const expected = Buffer.from(csrfToken(key, binding));
  const got = Buffer.from(token);
  return expected.length === got.length && crypto.timingSafeEqual(expected, got);
}

/** The pre-session cookie value, set when absent. */
export function ensureCsrfCookie(ctx: Context, names: CookieNames, secure: boolean): string {
  const existing = getCookie(ctx, names.csrf);
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
  const value = crypto.randomBytes(32).toString('base64url');
  setCookie(ctx, names.csrf, value, secure);
  return value;
}

const FORM_LIMIT = 16 * 1024;

/**
 * U+0000 in a form or query string (names or values), which PostgreSQL can neither store nor
 * compare: a bad request (400), as everywhere else, never a lookup that fails as a 500.
 */
export class InvalidCharacters extends Error {
  readonly description = 'Parameters must not contain the NUL character (U+0000).';
}

export function rejectNul(params: URLSearchParams): URLSearchParams {
  for (const [name, value] of params)
    if (name.includes('\0') || value.includes('\0')) throw new InvalidCharacters();
  return params;
}

/** A form-encoded body; anything else (wrong type, too big) is an empty form. */
export async function readForm(ctx: Context): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded')) {
    ctx.req.resume();
    return new URLSearchParams();
  }
  let form: URLSearchParams;
  try {
    form = new URLSearchParams((await readBody(ctx.req, FORM_LIMIT)).toString('utf8'));
  } catch (err) {
    if (err instanceof AppError) return new URLSearchParams();
    throw err;
  }
  return rejectNul(form);
}

/** The first parameter sent more than once, if any (RFC 6749 3.1 and 3.2). */
export function duplicated(params: URLSearchParams, names?: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (const [name] of params) {
    if (names && !names.includes(name)) continue;
    if (seen.has(name)) return name;
    seen.add(name);
  }
  return undefined;
}

/**
 * RFC 9112 3.2: a Host header that is not a plain host[:port] makes the request a bad one (400).
 * No Host at all is left alone: HTTP/1.0 may omit it, and Node refuses HTTP/1.1 without one.
 */
export function malformedHost(ctx: Context): boolean {
  const host = ctx.get('host');
  if (!host) return false;
  try {
    const url = new URL(`http://${host}`);
    return Boolean(url.username || url.password || url.pathname !== '/' || url.search || url.hash);
  } catch {
    return true;
  }
}

/**
 * A query parameter, read from the query string itself: ctx.URL is built from the Host header
 * and is an empty object when that header is malformed.
 */
export function queryParam(ctx: Context, name: string): string | null {
  return new URLSearchParams(ctx.querystring).get(name);
}

/** Only same-site paths: never an open redirect (no scheme, no "//host", no backslashes). */
export function safeReturnTo(value: string | null | undefined): string {
  if (!value || !value.startsWith('/') || value.startsWith('//') || /[\\\s]/.test(value))
    return '/admin';
  return value;
}
