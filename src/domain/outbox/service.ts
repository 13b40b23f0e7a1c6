// The email outbox. Every email the platform sends is a row written in the transaction that
// causes it (a welcome on a new enrollment), sent afterwards by the `email.send` job. Each
// address keeps its send history and a bounce flag: a bounced address is not written to again
// (its emails are `suppressed`) until it is taken off the list. Takes an account id so the legacy
// v1 `bounce` route can share the use cases.
import { inTransaction } from '../../db/tx.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import type { JobEngine } from '../../jobs/types.ts';
import { rejection } from '../shared/rejections.ts';
import { PermanentFailure, type Mailer } from './mailer.ts';
import { outboxRepo as repo, type Email, type Recipient } from './repo.ts';
import { accountsRepo } from '../accounts/repo.ts';

export const SEND_EMAIL_TASK = 'email.send';
/**
 * Tries of one email (graphile-worker's default; with its backoff, exp(min(n, 10)) s, about four
 * days, as mail servers keep a message). The last transient failure fails the email for good.
 */
export const EMAIL_MAX_ATTEMPTS = 25;

export interface NewEmail {
  accountId: number;
  userId: number | null;
  to: string;
  /** What caused it, e.g. `enrollment.welcome`. */
  kind: string;
  subject: string;
  body: string;
}

export class OutboxService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly jobs: JobEngine;
  private readonly mailer: Mailer;
  private readonly from: string;
  constructor(db: Db, clock: Clock, jobs: JobEngine, mailer: Mailer, from: string) {
    this.db = db;
    this.clock = clock;
    this.jobs = jobs;
    this.mailer = mailer;
    this.from = from;
  }

  /** Writes the email and its sending job in the caller's transaction; returns its id. */
  async queue({ tx }: { tx: Tx }, email: NewEmail): Promise<number> {
    const id = await repo.insert({ tx }, email, this.clock.now().toISOString());
    await this.jobs.enqueue(
      { tx },
      SEND_EMAIL_TASK,
      { email_id: id },
      { maxAttempts: EMAIL_MAX_ATTEMPTS },
    );
    return id;
  }

  /**
   * queue() for several emails at once (a chunk of grants): one multi-row insert and one enqueue
   * of their jobs. Returns their ids, in this order.
   */
  async queueMany({ tx }: { tx: Tx }, emails: NewEmail[]): Promise<number[]> {
    if (emails.length === 0) return [];
    const ids = await repo.insertMany({ tx }, emails, this.clock.now().toISOString());
    await this.jobs.enqueueMany(
      { tx },
      SEND_EMAIL_TASK,
      ids.map((id) => ({ email_id: id })),
      { maxAttempts: EMAIL_MAX_ATTEMPTS },
    );
    return ids;
  }

  /**
   * The job's work: sends a queued email (outside any transaction), then records the outcome.
   * A transient failure is recorded and thrown, so the job engine retries with backoff, except on
   * the `attempt`th try when that is the last (EMAIL_MAX_ATTEMPTS): then the email fails (not
   * left `queued` for ever, so a Diamond stage's communication can be re-sent on request). A
   * permanent SMTP refusal (5xx) fails the email and puts the address on the bounce list.
   */
  async send(emailId: number, attempt = 1): Promise<Email['status'] | null> {
    const email = await repo.get({ tx: this.db }, emailId);
    if (!email || email.status !== 'queued') return email?.status ?? null;
    // A blocked, removed or unavailable school writes to nobody: the email waits, without using
    // its tries, until the account is active again (release, in the transaction of that change).
    // The common case reads the status alone; holding reads it again, held for the transaction
    // (a reactivation in between then finds the email held and queues it).
    const active = (await accountsRepo.status({ tx: this.db }, email.accountId)) === 'active';
    const turn = active
      ? 'send'
      : await inTransaction(this.db, undefined, async (tx) => {
          if ((await accountsRepo.statusForShare({ tx }, email.accountId)) === 'active')
            return 'send';
          return (await repo.settle({ tx }, email.id, { status: 'held', error: null }))
            ? 'held'
            : 'gone';
        });
    if (turn === 'held') return 'held';
    if (turn === 'gone') return (await repo.get({ tx: this.db }, emailId))?.status ?? null;
    const lower = email.to.toLowerCase();
    if ((await repo.recipient({ tx: this.db }, email.accountId, lower))?.bounced) {
      await inTransaction(this.db, undefined, (tx) =>
        repo.settle({ tx }, email.id, { status: 'suppressed', error: 'address_bounced' }),
      );
      return 'suppressed';
    }
    try {
      await this.mailer.send({
        from: this.from,
        to: email.to,
        subject: email.subject,
        text: email.body,
      });
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      if (!(err instanceof PermanentFailure)) {
        if (attempt < EMAIL_MAX_ATTEMPTS) {
          await inTransaction(this.db, undefined, (tx) =>
            repo.recordAttempt({ tx }, email.id, message),
          );
          throw err;
        }
        await inTransaction(this.db, undefined, (tx) =>
          repo.settle({ tx }, email.id, {
            status: 'failed',
            attempts: email.attempts + 1,
            error: `gave up after ${attempt} tries: ${message}`.slice(0, 500),
          }),
        );
        return 'failed';
      }
      await inTransaction(this.db, undefined, async (tx) => {
        const now = this.clock.now().toISOString();
        const settled = await repo.settle({ tx }, email.id, {
          status: 'failed',
          attempts: email.attempts + 1,
          error: message.slice(0, 500),
        });
        if (settled)
          await repo.setBounce({ tx }, email.accountId, lower, now, {
            bounced: true,
            bouncedAt: now,
            bounceReason: message.slice(0, 500),
          });
      });
      return 'failed';
    }
    await inTransaction(this.db, undefined, async (tx) => {
      const now = this.clock.now().toISOString();
      const settled = await repo.settle({ tx }, email.id, {
        status: 'sent',
        attempts: email.attempts + 1,
        error: null,
        sentAt: now,
      });
      if (settled) await repo.recordSent({ tx }, email.accountId, lower, now);
    });
    return 'sent';
  }

  /** The address's send history and bounce flag, or null when nothing was ever sent to it. */
  async recipient(
    accountId: number,
    email: string,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<Recipient | null> {
    return repo.recipient({ tx }, accountId, email.toLowerCase());
  }

  /** The emails written to an address, newest first (at most `limit`). */
  async history(accountId: number, email: string, limit = 50, { tx = this.db }: { tx?: Tx } = {}) {
    return repo.toAddress({ tx }, accountId, email.toLowerCase(), limit);
  }

  /** At least one email to this address was sent. */
  async hasReceived(
    accountId: number,
    email: string,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<boolean> {
    return ((await this.recipient(accountId, email, { tx }))?.sentCount ?? 0) > 0;
  }

  async isBounced(
    accountId: number,
    email: string,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<boolean> {
    return (await this.recipient(accountId, email, { tx }))?.bounced ?? false;
  }

  /** Puts the address on the bounce list: emails to it are suppressed until it is taken off. */
  async bounce(
    accountId: number,
    email: string,
    reason: string | null,
    opts: { tx?: Tx } = {},
  ): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      const now = this.clock.now().toISOString();
      await repo.setBounce({ tx }, accountId, email.toLowerCase(), now, {
        bounced: true,
        bouncedAt: now,
        bounceReason: reason?.slice(0, 500) ?? null,
      });
    });
  }

  /**
   * Takes the address off the bounce list, so emails are sent to it again. An address that never
   * received an email is refused (422 domain_rule_violation, reason `never_emailed`): there is no
   * delivery history that could say it works. An address that is not bounced stays as it is.
   */
  async unbounce(accountId: number, email: string, opts: { tx?: Tx } = {}): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      const lower = email.toLowerCase();
      const r = await repo.recipient({ tx }, accountId, lower);
      if (!r || r.sentCount === 0)
        throw rejection(
          'domain_rule_violation',
          'never_emailed',
          'This address never received an email.',
          'email',
        );
      if (!r.bounced) return;
      const now = this.clock.now().toISOString();
      await repo.setBounce({ tx }, accountId, lower, now, {
        bounced: false,
        bouncedAt: null,
        bounceReason: null,
      });
    });
  }

  /** A sandbox reset: every email and address of the account. */
  /** The account is active again: its held emails are queued, each with its sending job. */
  async release({ tx }: { tx: Tx }, accountId: number): Promise<void> {
    const ids = await repo.release({ tx }, accountId);
    if (ids.length)
      await this.jobs.enqueueMany(
        { tx },
        SEND_EMAIL_TASK,
        ids.map((id) => ({ email_id: id })),
        { maxAttempts: EMAIL_MAX_ATTEMPTS },
      );
  }

  async resetAccount({ tx }: { tx: Tx }, accountId: number): Promise<number> {
    return repo.removeAccount({ tx }, accountId);
  }
}
