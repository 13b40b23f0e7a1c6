// Diamond automations, their memberships and processing attempts (tables `diamonds`,
// `diamond_memberships`, `diamond_processing_attempts`). Every function takes the caller's `tx`.
import { changedRow, newRow, toRow } from '../shared/row.ts';
import { isPostgres, type Tx } from '../../db/knex.ts';
import { insertId, json } from '../../db/dialect.ts';

export interface Communication {
  subject: string;
  body: string;
}

export interface Stage {
  key: string;
  name: string;
  communication: Communication;
}

export interface Diamond {
  id: number;
  accountId: number;
  name: string;
  stages: Stage[];
  revision: string;
  createdAt: string;
  updatedAt: string;
}

export interface Membership {
  id: number;
  accountId: number;
  diamondId: number;
  userId: number;
  stage: string;
  /** 1 for the first stage. */
  stagePosition: number;
  revision: string;
  createdAt: string;
  updatedAt: string;
}

export interface AttemptRow {
  id: number;
  membershipId: number;
  eventId: number | null;
  stage: string;
  emailId: number | null;
  /** As decided when it was made: `queued` (an email was written) or `skipped`. */
  status: 'queued' | 'skipped';
  requestedById: number | null;
  requestedByKind: string;
  selectionMode: string;
  selectionRows: number;
  createdAt: string;
}

export type NewDiamond = Pick<Diamond, 'accountId' | 'name' | 'stages'>;
export type NewMembership = Pick<Membership, 'accountId' | 'diamondId' | 'userId' | 'stage'>;
/** A move to another stage. */
export type StageMove = Pick<Membership, 'stage' | 'stagePosition'>;
export type NewAttempt = Omit<AttemptRow, 'id' | 'createdAt'> & { accountId: number };

const mapDiamond = (r: any): Diamond => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  name: r.name,
  stages: json<Stage[]>(r.stages, []),
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const mapMembership = (r: any): Membership => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  diamondId: Number(r.diamond_id),
  userId: Number(r.user_id),
  stage: r.stage,
  stagePosition: Number(r.stage_position),
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

const mapAttempt = (r: any): AttemptRow => ({
  id: Number(r.id),
  membershipId: Number(r.membership_id),
  eventId: num(r.event_id),
  stage: r.stage,
  emailId: num(r.email_id),
  status: r.status,
  requestedById: num(r.requested_by_id),
  requestedByKind: r.requested_by_kind,
  selectionMode: r.selection_mode,
  selectionRows: Number(r.selection_rows),
  createdAt: r.created_at,
});

export const automationsRepo = {
  mapDiamond,

  /** stages is JSON text. */
  async insertDiamond({ tx }: { tx: Tx }, d: NewDiamond, now: string): Promise<number> {
    return insertId({ tx }, 'diamonds', newRow({ ...d, stages: JSON.stringify(d.stages) }, now));
  },

  async getDiamond({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Diamond | null> {
    const r = await tx('diamonds').where({ account_id: accountId, id }).first();
    return r ? mapDiamond(r) : null;
  },

  /** A membership starts at the first stage. */
  async insertMembership({ tx }: { tx: Tx }, m: NewMembership, now: string): Promise<number> {
    return insertId({ tx }, 'diamond_memberships', newRow({ ...m, stagePosition: 1 }, now));
  },

  /**
   * The membership of the automation. `lock`: on PostgreSQL the row stays locked until the
   * transaction ends, so two requests for one membership run one after the other (SQLite runs
   * write transactions one at a time anyway).
   */
  async getMembership(
    { tx }: { tx: Tx },
    accountId: number,
    diamondId: number,
    id: number,
    lock = false,
  ): Promise<Membership | null> {
    const q = tx('diamond_memberships').where({
      account_id: accountId,
      diamond_id: diamondId,
      id,
    });
    if (lock && isPostgres(tx)) q.forNoKeyUpdate();
    const r = await q.first();
    return r ? mapMembership(r) : null;
  },

  /**
   * Moves the membership only from the stage it was read at (and, with If-Match, only from that
   * revision): a concurrent move makes this hit no row. Returns the rows hit.
   */
  async moveMembership(
    { tx }: { tx: Tx },
    m: Membership,
    to: StageMove,
    now: string,
    revision?: string,
  ): Promise<number> {
    const q = tx('diamond_memberships').where({ id: m.id, stage_position: m.stagePosition });
    if (revision !== undefined) q.where('revision', revision);
    return q.update(changedRow(to, now));
  },

  async insertAttempt({ tx }: { tx: Tx }, a: NewAttempt, now: string): Promise<number> {
    return insertId({ tx }, 'diamond_processing_attempts', {
      ...toRow(a),
      created_at: now,
      updated_at: now,
    });
  },

  async getAttempt({ tx }: { tx: Tx }, id: number): Promise<AttemptRow | null> {
    const r = await tx('diamond_processing_attempts').where({ id }).first();
    return r ? mapAttempt(r) : null;
  },

  /** Oldest first. */
  async attempts({ tx }: { tx: Tx }, membershipId: number): Promise<AttemptRow[]> {
    const rows = await tx('diamond_processing_attempts')
      .where({ membership_id: membershipId })
      .orderBy('id', 'asc');
    return rows.map(mapAttempt);
  },
};
