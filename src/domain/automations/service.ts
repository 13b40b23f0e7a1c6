// Diamond automations: ordered stages, each with the communication (an email) it sends. A member
// starts at the first stage and only ever moves forward; entering a stage queues its
// communication once through the email outbox, as a processing attempt, and a move records
// `diamond_membership.stage_changed` in the same transaction. A failed communication is sent again
// only when asked (POST processing-attempts), never automatically.
import { inTransaction } from '../../db/tx.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { isUniqueViolation } from '../../db/dialect.ts';
import { AppError, type ErrorDetail } from '../../errors.ts';
import { detailMessage } from '../../i18n/messages.ts';
import type { AuthContext } from '../credentials/auth.ts';
import type { EventRecorder } from '../events/types.ts';
import { usersRepo } from '../users/repo.ts';
import { guardedWrite } from '../shared/revision.ts';
import { Attempts, type Outbox, type ProcessingAttempt } from './attempts.ts';
import { automationsRepo as repo, type Diamond, type Membership, type Stage } from './repo.ts';

export type { Outbox, ProcessingAttempt };

export const STAGE_CHANGED = 'diamond_membership.stage_changed';

const detail = (field: string, code: string, reason?: string): ErrorDetail => ({
  field,
  code,
  message: detailMessage(code, 'en-US'),
  ...(reason ? { reason } : {}),
});

/** The row changed under us: with If-Match that is a stale revision, without it a lost race. */
const lost = (ifMatch: string | undefined) =>
  ifMatch === undefined
    ? new AppError('state_conflict', { details: [detail('stage', 'invalid', 'stage_changed')] })
    : new AppError('revision_mismatch');

export class AutomationsService {
  private readonly sending: Attempts;
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly events: EventRecorder;

  constructor(db: Db, clock: Clock, events: EventRecorder, outbox: Outbox) {
    this.db = db;
    this.clock = clock;
    this.events = events;
    this.sending = new Attempts(clock, outbox);
  }

  async createDiamond(
    accountId: number,
    input: { name: string; stages: Stage[] },
    opts: { tx?: Tx } = {},
  ): Promise<Diamond> {
    const dupes = this.problems(input);
    if (dupes.length) throw new AppError('validation_failed', { details: dupes });
    const stages = input.stages.map((s) => ({
      key: s.key,
      name: s.name.trim(),
      communication: { subject: s.communication.subject, body: s.communication.body },
    }));
    const now = this.clock.now().toISOString();
    return inTransaction(this.db, opts.tx, async (tx) => {
      const id = await repo.insertDiamond(
        { tx },
        { accountId, name: input.name.trim(), stages },
        now,
      );
      return (await repo.getDiamond({ tx }, accountId, id))!;
    });
  }

  /** What createDiamond refuses beyond its schema (stage keys used twice), without writing. */
  problems(input: { stages?: Stage[] }): ErrorDetail[] {
    const seen = new Set<string>();
    return (input.stages ?? []).flatMap((s, i) =>
      seen.has(s.key) ? [detail(`stages.${i}.key`, 'already_exists')] : (seen.add(s.key), []),
    );
  }

  async getDiamond(
    accountId: number,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<Diamond> {
    const d = id === null ? null : await repo.getDiamond({ tx }, accountId, id);
    if (!d) throw new AppError('not_found');
    return d;
  }

  async getMembership(
    accountId: number,
    diamondId: number | null,
    id: number | null,
    { tx = this.db, lock = false }: { tx?: Tx; lock?: boolean } = {},
  ): Promise<Membership> {
    const m =
      diamondId === null || id === null
        ? null
        : await repo.getMembership({ tx }, accountId, diamondId, id, lock);
    if (!m) throw new AppError('not_found');
    return m;
  }

  /** The student joins at the first stage, whose communication is queued at once. */
  async join(
    auth: AuthContext,
    diamondId: number | null,
    userId: number | null,
    opts: { tx?: Tx } = {},
  ): Promise<Membership> {
    const accountId = auth.account.id;
    return inTransaction(this.db, opts.tx, async (tx) => {
      const diamond = await this.getDiamond(accountId, diamondId, { tx });
      const user = userId === null ? null : await usersRepo.get({ tx }, accountId, userId);
      if (!user) {
        const message = 'No student of the account has this id.';
        throw new AppError('validation_failed', {
          details: [{ field: 'user_id', code: 'not_found', message }],
        });
      }
      const first = diamond.stages[0]!;
      const now = this.clock.now().toISOString();
      let id: number;
      try {
        id = await repo.insertMembership(
          { tx },
          { accountId, diamondId: diamond.id, userId: user.id, stage: first.key },
          now,
        );
      } catch (err) {
        if (isUniqueViolation(err))
          throw new AppError('already_exists', { details: [detail('user_id', 'already_exists')] });
        throw err;
      }
      const m = (await repo.getMembership({ tx }, accountId, diamond.id, id))!;
      await this.sending.communicate({ tx }, auth, m, first, user.email, null, 'initial');
      return m;
    });
  }

  /**
   * Forward only: a target at or before the current stage is 409 state_conflict. The move, its
   * event and the new stage's communication commit together, so the communication is sent once.
   */
  async move(
    auth: AuthContext,
    diamondId: number | null,
    id: number | null,
    input: { stage: string; reason: string },
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<Membership> {
    const accountId = auth.account.id;
    return inTransaction(this.db, opts.tx, async (tx) => {
      const target = async (m: Membership) => {
        const diamond = (await repo.getDiamond({ tx }, accountId, m.diamondId))!;
        const position = diamond.stages.findIndex((s) => s.key === input.stage) + 1;
        if (position === 0) {
          const values = diamond.stages.map((st) => st.key).join(', ');
          const message = detailMessage('invalid_value', 'en-US', { values });
          throw new AppError('validation_failed', {
            details: [{ field: 'stage', code: 'invalid_value', message }],
          });
        }
        if (position <= m.stagePosition) {
          const reason = position === m.stagePosition ? 'current_stage' : 'earlier_stage';
          throw new AppError('state_conflict', { details: [detail('stage', 'invalid', reason)] });
        }
        return { stage: diamond.stages[position - 1]!, position };
      };
      let to!: Awaited<ReturnType<typeof target>>;
      // Locked read (PostgreSQL): two moves of one membership run one after the other.
      const m = await guardedWrite({
        load: () => this.getMembership(accountId, diamondId, id, { tx, lock: true }),
        ifMatch,
        write: async (m, guard) => {
          to = await target(m);
          const now = this.clock.now().toISOString();
          const move = { stage: to.stage.key, stagePosition: to.position };
          return repo.moveMembership({ tx }, m, move, now, guard);
        },
        lost: async () => lost(ifMatch),
      });
      const targetStage = to.stage;
      const event = await this.events.record(
        { tx },
        {
          accountId,
          type: STAGE_CHANGED,
          data: {
            membership_id: String(m.id),
            diamond_id: String(m.diamondId),
            user_id: String(m.userId),
            from_stage: m.stage,
            to_stage: targetStage.key,
            reason: input.reason,
          },
        },
      );
      const user = await usersRepo.get({ tx }, accountId, m.userId);
      const moved = (await repo.getMembership({ tx }, accountId, m.diamondId, m.id))!;
      await this.sending.communicate(
        { tx },
        auth,
        moved,
        targetStage,
        user!.email,
        event.id || null,
        'initial',
      );
      return moved;
    });
  }

  async attempts(
    accountId: number,
    diamondId: number | null,
    membershipId: number | null,
  ): Promise<ProcessingAttempt[]> {
    const m = await this.getMembership(accountId, diamondId, membershipId);
    return this.sending.resolve({ tx: this.db }, await repo.attempts({ tx: this.db }, m.id));
  }

  /**
   * Sends the current stage's failed communication again. A stage already confirmed (its
   * communication was sent) gets a `skipped` attempt and nothing is sent; while the communication
   * is still queued there is nothing to retry yet (409 state_conflict).
   */
  async retry(
    auth: AuthContext,
    diamondId: number | null,
    membershipId: number | null,
    opts: { tx?: Tx } = {},
  ): Promise<ProcessingAttempt> {
    const accountId = auth.account.id;
    return inTransaction(this.db, opts.tx, async (tx) => {
      const m = await this.getMembership(accountId, diamondId, membershipId, { tx, lock: true });
      const current = (await repo.attempts({ tx }, m.id)).filter((a) => a.stage === m.stage);
      const resolved = await this.sending.resolve({ tx }, current);
      const latest = resolved.filter((a) => a.status !== 'skipped').at(-1);
      const eventId = latest?.eventId ?? null;
      if (!latest || resolved.some((a) => a.status === 'sent')) {
        const id = await this.sending.insert(
          { tx },
          auth,
          m,
          null,
          eventId,
          'failed',
          0,
          'skipped',
        );
        return (await this.sending.resolve({ tx }, [(await repo.getAttempt({ tx }, id))!]))[0]!;
      }
      if (latest.status === 'queued') {
        throw new AppError('state_conflict', {
          details: [
            {
              code: 'invalid',
              message: 'The communication is still queued.',
              reason: 'communication_queued',
            },
          ],
        });
      }
      const diamond = (await repo.getDiamond({ tx }, accountId, m.diamondId))!;
      const stage = diamond.stages.find((s) => s.key === m.stage)!;
      const user = await usersRepo.get({ tx }, accountId, m.userId);
      const id = await this.sending.communicate(
        { tx },
        auth,
        m,
        stage,
        user!.email,
        eventId,
        'failed',
      );
      return (await this.sending.resolve({ tx }, [(await repo.getAttempt({ tx }, id))!]))[0]!;
    });
  }
}
