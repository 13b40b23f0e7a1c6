// The email outbox (table `emails`) and each address's send history and bounce flag (table
// `email_recipients`). Every function takes the caller's `tx`.
import type { Tx } from '../../db/knex.ts';
import { bool, insertId } from '../../db/dialect.ts';
import { isPostgres } from '../../db/engine.ts';
import { insertJson } from '../../db/statements.ts';
import { toRow } from '../shared/row.ts';

/** held: its account was not active when its turn came; queued again when it is (service.ts). */
export type EmailStatus = 'queued' | 'held' | 'sent' | 'failed' | 'suppressed';

export interface Email {
  id: number;
  accountId: number;
  userId: number | null;
  to: string;
  kind: string;
  subject: string;
  body: string;
  status: EmailStatus;
  attempts: number;
  error: string | null;
  createdAt: string;
  sentAt: string | null;
}

export interface Recipient {
  email: string;
  sentCount: number;
  lastSentAt: string | null;
  bounced: boolean;
  bouncedAt: string | null;
  bounceReason: string | null;
}

/** A new email, queued; the repository sets its status, attempts and creation time. */
export type NewEmailRow = Pick<Email, 'accountId' | 'userId' | 'to' | 'kind' | 'subject' | 'body'>;

/** How a queued email ended. */
export type Settlement = Pick<Email, 'status' | 'error'> & { attempts?: number; sentAt?: string };

/** An address's bounce flag as written (set with its time and reason, or cleared). */
export type Bounce = Pick<Recipient, 'bounced' | 'bouncedAt' | 'bounceReason'>;

/** PostgreSQL types of a new email's columns (insertMany), in its rows' key order. */
const EMAIL_TYPES: Record<string, string> = {
  account_id: 'int',
  user_id: 'int',
  to_email: 'text',
  to_email_lower: 'text',
  kind: 'text',
  subject: 'text',
  body: 'text',
  status: 'text',
  attempts: 'int',
  created_at: 'text',
};

const mapEmail = (r: any): Email => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  userId: r.user_id === null || r.user_id === undefined ? null : Number(r.user_id),
  to: r.to_email,
  kind: r.kind,
  subject: r.subject,
  body: r.body,
  status: r.status,
  attempts: Number(r.attempts),
  error: r.error ?? null,
  createdAt: r.created_at,
  sentAt: r.sent_at ?? null,
});

const mapRecipient = (r: any): Recipient => ({
  email: r.email_lower,
  sentCount: Number(r.sent_count),
  lastSentAt: r.last_sent_at ?? null,
  bounced: bool(r.bounced),
  bouncedAt: r.bounced_at ?? null,
  bounceReason: r.bounce_reason ?? null,
});

export const outboxRepo = {
  async insert({ tx }: { tx: Tx }, e: NewEmailRow, now: string): Promise<number> {
    const { to, ...rest } = e;
    return insertId({ tx }, 'emails', {
      ...toRow(rest),
      to_email: to,
      to_email_lower: to.toLowerCase(),
      status: 'queued',
      attempts: 0,
      created_at: now,
    });
  },

  /**
   * Inserts the emails in this order; their ids, ascending, in the same order (one statement on
   * PostgreSQL, whose sequence numbers the rows of one INSERT in the order they are listed).
   */
  async insertMany({ tx }: { tx: Tx }, emails: NewEmailRow[], now: string): Promise<number[]> {
    if (!isPostgres(tx)) {
      const ids: number[] = [];
      for (const e of emails) ids.push(await outboxRepo.insert({ tx }, e, now));
      return ids;
    }
    const rows = emails.map((e) => ({
      account_id: e.accountId,
      user_id: e.userId,
      to_email: e.to,
      to_email_lower: e.to.toLowerCase(),
      kind: e.kind,
      subject: e.subject,
      body: e.body,
      status: 'queued',
      attempts: 0,
      created_at: now,
    }));
    const returned = await insertJson({ tx }, 'emails', EMAIL_TYPES, rows, 'RETURNING id');
    return returned.map((r) => Number(r.id)).sort((a, b) => a - b);
  },

  async get({ tx }: { tx: Tx }, id: number): Promise<Email | null> {
    const r = await tx('emails').where('id', id).first();
    return r ? mapEmail(r) : null;
  },

  /** The emails written to an address, newest first. */
  async toAddress({ tx }: { tx: Tx }, accountId: number, emailLower: string, limit: number) {
    const rows = await tx('emails')
      .where({ account_id: accountId, to_email_lower: emailLower })
      .orderBy('id', 'desc')
      .limit(limit);
    return rows.map(mapEmail);
  },

  /** Settles a queued email; false when it was settled already (another run got there). */
  async settle({ tx }: { tx: Tx }, id: number, s: Settlement): Promise<boolean> {
    return (await tx('emails').where({ id, status: 'queued' }).update(toRow(s))) > 0;
  },

  /** An account's held emails queued again; their ids, to enqueue their jobs. */
  async release({ tx }: { tx: Tx }, accountId: number): Promise<number[]> {
    const ids = (
      await tx('emails').where({ account_id: accountId, status: 'held' }).select('id')
    ).map((r: { id: number }) => Number(r.id));
    // The account's row is locked by the status change this runs in, so no email is held
    // between the read and the update (holding reads that row FOR SHARE): no id list to bind.
    if (ids.length)
      await tx('emails')
        .where({ account_id: accountId, status: 'held' })
        .update({ status: 'queued' });
    return ids;
  },

  async recordAttempt({ tx }: { tx: Tx }, id: number, error: string): Promise<void> {
    await tx('emails')
      .where({ id, status: 'queued' })
      .update({ attempts: tx.raw('attempts + 1'), error: error.slice(0, 500) });
  },

  async recipient(
    { tx }: { tx: Tx },
    accountId: number,
    emailLower: string,
  ): Promise<Recipient | null> {
    const r = await tx('email_recipients')
      .where({ account_id: accountId, email_lower: emailLower })
      .first();
    return r ? mapRecipient(r) : null;
  },

  /** One more email sent to the address. */
  async recordSent(
    { tx }: { tx: Tx },
    accountId: number,
    emailLower: string,
    now: string,
  ): Promise<void> {
    await upsertRecipient({ tx }, accountId, emailLower, now, {
      sent_count: tx.raw('sent_count + 1'),
      last_sent_at: now,
    });
  },

  /** Sets or clears the address's bounce flag. */
  async setBounce(
    { tx }: { tx: Tx },
    accountId: number,
    emailLower: string,
    now: string,
    b: Bounce,
  ) {
    await upsertRecipient({ tx }, accountId, emailLower, now, toRow(b));
  },

  async removeAccount({ tx }: { tx: Tx }, accountId: number): Promise<number> {
    await tx('email_recipients').where('account_id', accountId).delete();
    return tx('emails').where('account_id', accountId).delete();
  },
};

/** Creates the address's row when missing, then applies `changes`. */
async function upsertRecipient(
  { tx }: { tx: Tx },
  accountId: number,
  emailLower: string,
  now: string,
  changes: Record<string, unknown>,
): Promise<void> {
  await tx('email_recipients')
    .insert({ account_id: accountId, email_lower: emailLower, sent_count: 0, updated_at: now })
    .onConflict(['account_id', 'email_lower'])
    .ignore();
  await tx('email_recipients')
    .where({ account_id: accountId, email_lower: emailLower })
    .update({ ...changes, updated_at: now });
}
