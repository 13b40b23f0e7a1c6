// Brute-force throttling of the sign-in forms (rate-limiter-flexible). Only failures count; a
// success clears the per-address counter. Limits:
// - password: 5 failures per address and email, 30 per address, in 15 minutes;
// - two-factor: 5 failures per administrator in 15 minutes (the password alone cannot reset it).
// Blocked attempts are refused before the password or code is even checked.
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

  /** Seconds until the password form may be tried again, or 0. */
  async passwordBlocked(ip: string, email: string): Promise<number> {
    return Math.max(
      await blocked(this.perEmail, `${ip}|${email.toLowerCase()}`),
      await blocked(this.perAddress, ip),
    );
  }

  async passwordFailed(ip: string, email: string): Promise<void> {
    await penalize(this.perEmail, `${ip}|${email.toLowerCase()}`);
    await penalize(this.perAddress, ip);
  }

  async passwordSucceeded(ip: string, email: string): Promise<void> {
    await this.perEmail.delete(`${ip}|${email.toLowerCase()}`);
  }

  async codeBlocked(adminId: number): Promise<number> {
    return blocked(this.perAdmin, String(adminId));
  }

  async codeFailed(adminId: number): Promise<void> {
    await penalize(this.perAdmin, String(adminId));
  }

  async codeSucceeded(adminId: number): Promise<void> {
    await this.perAdmin.delete(String(adminId));
  }
}

async function blocked(l: RateLimiterAbstract, key: string): Promise<number> {
  const res = await l.get(key);
  if (!res || res.consumedPoints < l.points) return 0;
  return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
}

async function penalize(l: RateLimiterAbstract, key: string): Promise<void> {
  try {
    await l.consume(key, 1);
  } catch (err) {
    // Over the limit: the key is now blocked, which is the point. Store failures propagate.
    if (!(err instanceof RateLimiterRes)) throw err;
  }
}
