// Administrator browser sessions: created by the password step ('two_factor'), completed by the
// TOTP step ('complete', with a new token so a cookie seen before two-factor is worth nothing),
// ended by sign-out. The cookie holds a random token; the database holds its SHA-256.
import crypto from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/knex.ts';
import { transaction } from '../db/tx.ts';
import { TOTP_CONTEXT } from '../domain/accounts/service.ts';
import { sha256 } from '../domain/shared/ids.ts';
import { isSealed, unseal } from '../secrets-key.ts';
import { lockAdministrator } from './admin-lock.ts';
import { SESSION_SECONDS, TWO_FACTOR_SECONDS } from './constants.ts';

export interface AdminSession {
  id: number;
  token: string;
  stage: 'two_factor' | 'complete';
  adminId: number;
  email: string;
  totpSecret: string;
  accountId: number;
  accountName: string;
}

const newToken = () => crypto.randomBytes(32).toString('base64url');

export class Sessions {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly secretsKey: Buffer;
  constructor(db: Db, clock: Clock, secretsKey: Buffer) {
    this.db = db;
    this.clock = clock;
    this.secretsKey = secretsKey;
  }

  private at(offsetSeconds = 0): string {
    return new Date(this.clock.now().getTime() + offsetSeconds * 1000).toISOString();
  }

  async start(adminId: number): Promise<string> {
    const token = newToken();
    await this.db('admin_sessions').insert({
      token_hash: sha256(token),
      admin_id: adminId,
      stage: 'two_factor',
      created_at: this.at(),
      expires_at: this.at(TWO_FACTOR_SECONDS),
    });
    return token;
  }

  /** The live session behind a cookie value, or null (unknown, ended, expired, admin removed). */
  async find(token: string | undefined): Promise<AdminSession | null> {
    if (!token || token.length > 100) return null;
    const r = await this.db('admin_sessions as s')
      .join('administrators as a', 'a.id', 's.admin_id')
      .join('accounts as c', 'c.id', 'a.account_id')
      .where('s.token_hash', sha256(token))
      .whereNull('s.ended_at')
      .where('s.expires_at', '>', this.at())
      .where('a.status', 'active')
      .first(
        's.id',
        's.stage',
        's.admin_id',
        'a.email',
        'a.totp_secret',
        'a.account_id',
        'c.name as account_name',
      );
    if (!r) return null;
    return {
      id: r.id,
      token,
      stage: r.stage,
      adminId: r.admin_id,
      email: r.email,
      totpSecret: isSealed(r.totp_secret)
        ? unseal(this.secretsKey, r.totp_secret, TOTP_CONTEXT)
        : r.totp_secret,
      accountId: r.account_id,
      accountName: r.account_name,
    };
  }

  /**
   * Marks two-factor done with this TOTP time step and returns the session's new token; null when
   * the administrator already used this step or a later one (a replay), or the session is no
   * longer waiting for two-factor.
   */
  async complete(id: number, adminId: number, totpStep: number): Promise<string | null> {
    const token = newToken();
    return transaction(this.db, async (tx) => {
      // Parallel sign-ins with one code: only the first to hold the lock finds the step unused.
      await lockAdministrator({ tx }, adminId);
      const r = await tx('admin_sessions').where('admin_id', adminId).max('totp_step as step');
      const last = r[0]?.step;
      if (last !== null && last !== undefined && totpStep <= Number(last)) return null;
      const updated = await tx('admin_sessions')
        .where({ id, stage: 'two_factor' })
        .update({
          token_hash: sha256(token),
          stage: 'complete',
          totp_step: totpStep,
          expires_at: this.at(SESSION_SECONDS),
        });
      return updated ? token : null;
    });
  }

  async end(id: number): Promise<void> {
    await this.db('admin_sessions').where('id', id).whereNull('ended_at').update({
      ended_at: this.at(),
    });
  }
}
