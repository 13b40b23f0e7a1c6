// Processing attempts of a membership: each one sends (or, once the stage is confirmed, skips)
// the communication of the membership's stage. The email itself is the outbox's: an attempt is
// `queued` until the outbox job settles its email, and then `sent` or `failed` (refused, or the
// address is on the bounce list). The outbox never sends a failed email again on its own.
import type { Clock } from '../../clock.ts';
import type { Tx } from '../../db/knex.ts';
import type { AuthContext } from '../credentials/auth.ts';
import type { NewEmail } from '../outbox/service.ts';
import { outboxRepo } from '../outbox/repo.ts';
import { automationsRepo as repo, type AttemptRow, type Membership, type Stage } from './repo.ts';

/** The outbox `kind` of a stage's communication. */
export const COMMUNICATION_KIND = 'diamond.stage_communication';

/** What the outbox gives this context: an email written in the caller's transaction. */
export interface Outbox {
  queue({ tx }: { tx: Tx }, email: NewEmail): Promise<number>;
}

export type AttemptStatus = 'queued' | 'sent' | 'failed' | 'skipped';

export interface ProcessingAttempt {
  id: number;
  membershipId: number;
  eventId: number | null;
  status: AttemptStatus;
  communicationSent: boolean;
  stageConfirmed: boolean;
  error: { code: string; message: string } | null;
  requestedBy: { id: number | null; kind: string };
  selection: { mode: string; rows: number };
  createdAt: string;
}

export class Attempts {
  private readonly clock: Clock;
  private readonly outbox: Outbox;
  constructor(clock: Clock, outbox: Outbox) {
    this.clock = clock;
    this.outbox = outbox;
  }

  /** Queues the stage's email in the outbox and records the attempt that carries it. */
  async communicate(
    { tx }: { tx: Tx },
    auth: AuthContext,
    m: Membership,
    stage: Stage,
    to: string,
    eventId: number | null,
    mode: 'initial' | 'failed',
  ): Promise<number> {
    const emailId = await this.outbox.queue(
      { tx },
      {
        accountId: m.accountId,
        userId: m.userId,
        to,
        kind: COMMUNICATION_KIND,
        subject: stage.communication.subject,
        body: stage.communication.body,
      },
    );
    return this.insert({ tx }, auth, m, emailId, eventId, mode, 1, 'queued');
  }

  insert(
    { tx }: { tx: Tx },
    auth: AuthContext,
    m: Membership,
    emailId: number | null,
    eventId: number | null,
    mode: string,
    rows: number,
    status: AttemptRow['status'],
  ): Promise<number> {
    const now = this.clock.now().toISOString();
    return repo.insertAttempt(
      { tx },
      {
        accountId: m.accountId,
        membershipId: m.id,
        eventId,
        stage: m.stage,
        emailId,
        status,
        requestedById: auth.credential.id,
        requestedByKind: 'credential',
        selectionMode: mode,
        selectionRows: rows,
      },
      now,
    );
  }

  /** An attempt's status is its email's: the outbox job settles it (sent, failed, suppressed). */
  async resolve({ tx }: { tx: Tx }, rows: AttemptRow[]): Promise<ProcessingAttempt[]> {
    const out: ProcessingAttempt[] = [];
    for (const a of rows) {
      const email = a.emailId === null ? null : await outboxRepo.get({ tx }, a.emailId);
      let status: AttemptStatus = a.status;
      let error: ProcessingAttempt['error'] = null;
      if (email?.status === 'sent') status = 'sent';
      else if (email?.status === 'failed') {
        status = 'failed';
        error = { code: 'delivery_failed', message: email.error ?? 'The email was refused.' };
      } else if (email?.status === 'suppressed') {
        status = 'failed';
        error = { code: 'address_bounced', message: 'The address is on the bounce list.' };
      }
      out.push({
        id: a.id,
        membershipId: a.membershipId,
        eventId: a.eventId,
        status,
        communicationSent: status === 'sent',
        stageConfirmed: status === 'sent' || status === 'skipped',
        error,
        requestedBy: { id: a.requestedById, kind: a.requestedByKind },
        selection: { mode: a.selectionMode, rows: a.selectionRows },
        createdAt: a.createdAt,
      });
    }
    return out;
  }
}
