// Brute-force throttling of the sign-in forms (rate-limiter-flexible). Limits, per 15 minutes:
// - password: 5 attempts per address and email, 30 per address;
// - two-factor: 5 attempts per administrator (the password alone cannot reset it).
// An attempt is counted before the password or code is checked, so parallel guesses cannot all
// pass the check before the first failure is recorded; a success gives its attempt back (a right
// password also clears its email's counter, a right code the administrator's). Refused attempts
// are not checked at all.
import {
  RateLimiterMemory,
  RateLimiterPostgres,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import type { Db } from '../db/knex.ts';
import { isPostgres } from '../db/knex.ts';

const WINDOW_SECONDS = 15 * 60;

function limiter(db: Db, keyPrefix: string, points: number): RateLimiterAbstract {
  const options = { keyPrefix, points, duration: WINDOW_SECONDS, blockDuration: WINDOW_SECONDS };
  // Shared by every instance on PostgreSQL (the table from migration 001); in memory on SQLite.
  // Both count atomically (an upsert; one synchronous map update).
  return isPostgres(db)
    ? new RateLimiterPostgres({
        ...options,
        storeClient: db,
        storeType: 'knex',
        tableName: 'rate_limits',
        tableCreated: true,
      })
    : new RateLimiterMemory(options);
}

export class SignInThrottle {
  private readonly perEmail: RateLimiterAbstract;
  private readonly perAddress: RateLimiterAbstract;
  private readonly perAdmin: RateLimiterAbstract;

  constructor(db: Db) {
    this.perEmail = limiter(db, 'signin_email', 5);
    this.perAddress = limiter(db, 'signin_ip', 30);
    this.perAdmin = limiter(db, 'signin_totp', 5);
  }

  /** Counts a password attempt: 0 when it may be checked, or the seconds to wait. */
  async passwordAttempt(ip: string, email: string): Promise<number> {
    const key = emailKey(ip, email);
    const wait = await attempt(this.perEmail, key);
    if (wait) return wait;
    const waitAddress = await attempt(this.perAddress, ip);
    // Refused for the address: not an attempt on this email either.
    if (waitAddress) await this.perEmail.reward(key, 1);
    return waitAddress;
  }

  async passwordSucceeded(ip: string, email: string): Promise<void> {
    await this.perEmail.delete(emailKey(ip, email));
    await this.perAddress.reward(ip, 1);
  }

  /** Counts a two-factor attempt: 0 when it may be checked, or the seconds to wait. */
  async codeAttempt(adminId: number): Promise<number> {
    return attempt(this.perAdmin, String(adminId));
  }

  async codeSucceeded(adminId: number): Promise<void> {
    await this.perAdmin.delete(String(adminId));
  }
}

const emailKey = (ip: string, email: string) => `${ip}|${email.toLowerCase()}`;

async function attempt(l: RateLimiterAbstract, key: string): Promise<number> {
  try {
    await l.consume(key, 1);
    return 0;
  } catch (err) {
    // Over the limit (the key stays blocked for the window). Store failures propagate.
    if (!(err instanceof RateLimiterRes)) throw err;
    return Math.max(1, Math.ceil(err.msBeforeNext / 1000));
  }
}
