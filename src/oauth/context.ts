// What the OAuth routes share, built once in createOAuth.
import type { Context } from 'koa';
import type { Clock } from '../clock.ts';
import type { AccountsService } from '../domain/accounts/service.ts';
import type { Db } from '../db/knex.ts';
import type { Logger } from '../log.ts';
import type { AdminSession, Sessions } from './sessions.ts';
import type { SignInThrottle } from './throttle.ts';
import type { TokenService } from './tokens.ts';
import { getCookie, type CookieNames } from './web.ts';

export interface Web {
  db: Db;
  clock: Clock;
  logger: Logger;
  issuer: string;
  /** Cookies get Secure (and the __Host- prefix) when the public base URL is https. */
  secure: boolean;
  names: CookieNames;
  csrfKey: Buffer;
  sessions: Sessions;
  throttle: SignInThrottle;
  tokens: TokenService;
  /** Password checks (their work factor is PASSWORD_HASH_COST). */
  accounts: AccountsService;
}

export function currentSession(web: Web, ctx: Context): Promise<AdminSession | null> {
  return web.sessions.find(getCookie(ctx, web.names.session));
}

/** 303: the browser follows with GET, whatever the method of the request. */
export function seeOther(ctx: Context, location: string): void {
  ctx.status = 303;
  ctx.redirect(location);
}
