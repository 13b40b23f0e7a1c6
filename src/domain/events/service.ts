// Events: what happened in an account, recorded once, in the caller's transaction, in the current
// version of its type from the catalog (spec/events), and never rebuilt: GET /events/{id},
// webhook deliveries and replays all send the JSON as recorded. Kept 30 days. Listeners hear of
// an event only once the transaction that recorded it has committed (src/domain/events/notify.ts).
import type { Clock } from '../../clock.ts';
import { DAY } from '../../clock.ts';
import { isPostgres, type Db, type Tx } from '../../db/engine.ts';
import { inTransaction } from '../../db/tx.ts';
import { purgeInIdOrder } from '../../db/purge.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { PageResult } from '../../db/page.ts';
import { AppError } from '../../errors.ts';
import { detailMessage } from '../../i18n/messages.ts';
import type { Logger } from '../../log.ts';
import { EventCatalog } from './catalog.ts';
import { EventNotifier, type EventListener } from './notify.ts';
import { eventsRepo as repo } from './repo.ts';
import type { Event, EventRecorder, NewEvent, RecordedInsert, RecordStep } from './types.ts';

export const EVENT_RETENTION_MS = 30 * DAY;
/** Events deleted per transaction by the sweep: short transactions, even after a long pause. */
const PURGE_CHUNK = 1000;

export interface EventListQuery {
  type?: string;
  created_after?: string;
  created_before?: string;
  sort?: 'created_at' | '-created_at';
  limit?: number;
  cursor?: string;
}

/**
 * Runs in the recording transaction (the webhook fan-out): it commits or rolls back with it.
 * `rows`: what the hook's step returned, when it travelled with the insert (PostgreSQL).
 */
export type RecordHook = (tx: Tx, event: Event, rows?: unknown[]) => Promise<void>;
/**
 * PostgreSQL: the hook's work done by the events' INSERT statement itself (one round trip
 * fewer), a CTE of it (RecordStep), or null when these events need none. `events`: the events
 * about to be inserted, in recording order (one for record()).
 */
export type RecordPart = (
  events: Pick<Event, 'accountId' | 'type' | 'version' | 'createdAt'>[],
) => RecordStep | null;
/** The same for several events recorded at once (recordMany), in recording order. */
export type RecordManyHook = (tx: Tx, events: Event[], rows?: unknown[]) => Promise<void>;

/** An ISO instant normalized to UTC with milliseconds, so instants compare as strings. */
export function instantParam(
  name: string,
  v: string | undefined,
  kind: 'parameter' | 'field' = 'parameter',
): string | undefined {
  if (v === undefined) return undefined;
  const ms = Date.parse(v);
  // The date-time format admits a leap second (…:60Z), which Date cannot represent.
  if (Number.isNaN(ms)) {
    throw new AppError('validation_failed', {
      details: [
        { [kind]: name, code: 'invalid_format', message: detailMessage('invalid', 'en-US') },
      ],
    });
  }
  return new Date(ms).toISOString();
}

/**
 * recordWithInsert's stand-in for the id the database will assign: 15 digits (exact as a
 * JavaScript number, and a valid id in every event schema), unlikely in a row's other values;
 * the data's text must hold it exactly once.
 */
const PLACEHOLDER_ID = 987654321098765;
const PLACEHOLDER_TEXT = String(PLACEHOLDER_ID);
/**
 * A row's values as PostgreSQL will return them: node-postgres sends a text parameter as UTF-8,
 * which turns a lone surrogate into U+FFFD (toWellFormed does the same).
 */
function asStored(row: Record<string, unknown>): Record<string, unknown> {
  // Copied only when a value changes (rarely): isWellFormed is a fast check, a copy is not.
  let out = row;
  for (const k in row) {
    const v = row[k];
    if (typeof v === 'string' && !(v as unknown as Unicode).isWellFormed()) {
      if (out === row) out = { ...row };
      out[k] = (v as unknown as Unicode).toWellFormed();
    }
  }
  return out;
}
type Unicode = { isWellFormed(): boolean; toWellFormed(): string };

/** The hooks' steps a statement runs (the hooks without one send none). */
const sent = (steps: (RecordStep | null)[]): RecordStep[] => steps.filter((s) => s !== null);
/** Each hook's rows, in hook order, from a statement that ran sent(steps). */
const perHook = (steps: (RecordStep | null)[], rows: unknown[][]) => {
  let k = 0;
  return steps.map((s) => (s === null ? undefined : rows[k++]));
};

export class EventsService implements EventRecorder {
  private readonly hooks: { one: RecordHook; many?: RecordManyHook; part?: RecordPart }[] = [];
  private readonly notifier: EventNotifier;
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  readonly catalog: EventCatalog;

  constructor(db: Db, clock: Clock, cursors: CursorCodec, catalog: EventCatalog, logger: Logger) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.catalog = catalog;
    this.notifier = new EventNotifier(db, logger);
  }

  /**
   * Adds work to every recording transaction (webhook deliveries); `many`, when given, does it
   * for events recorded together (recordMany), else `one` runs for each. `part`, when given, is
   * run by the events' INSERT on PostgreSQL and its rows handed to `one` or `many` (with no
   * `many`, recordMany does not send it: `one` then runs without rows).
   */
  onRecord(one: RecordHook, many?: RecordManyHook, part?: RecordPart): void {
    this.hooks.push({ one, many, part });
  }

  /** The hooks' steps for these events (null where a hook has none), hook by hook. */
  private steps(events: Parameters<RecordPart>[0], many: boolean): (RecordStep | null)[] {
    return this.hooks.map((h) => (h.part && (!many || h.many) ? h.part(events) : null));
  }

  /**
   * Records the event in the caller's transaction. An unknown type, or data that does not match
   * the type's published schema, is a programming error: the change fails rather than publish a
   * shape the catalog does not describe.
   */
  async record({ tx }: { tx: Tx }, e: NewEvent): Promise<Event> {
    const version = this.checked(e);
    const createdAt = this.clock.now().toISOString();
    const row = { accountId: e.accountId, type: e.type, version, data: e.data, createdAt };
    // PostgreSQL: the NOTIFY and the hooks' steps travel with the insert (one round trip);
    // SQLite announces on commit and its hooks do their own work.
    let id: number;
    let rows: (unknown[] | undefined)[] = [];
    if (isPostgres(tx)) {
      const steps = this.steps([row], false);
      const r = await repo.insertNotifying({ tx }, row, this.notifier.channel, sent(steps));
      id = r.id;
      rows = perHook(steps, r.rows);
    } else id = await repo.insert({ tx }, row);
    const event: Event = {
      id,
      accountId: e.accountId,
      type: e.type,
      version,
      data: e.data,
      createdAt,
    };
    if (!isPostgres(tx)) this.notifier.recorded();
    for (const [i, hook] of this.hooks.entries()) await hook.one(tx, event, rows[i]);
    return event;
  }

  /**
   * PostgreSQL: `insert` and the event `about` its row in one statement (see RecordedInsert).
   * The event's data is built from the row as written, with a placeholder id that the statement
   * replaces by the row's own: undefined (the caller inserts, then records) when the placeholder
   * is not found exactly once in the data's JSON text.
   */
  async recordWithInsert(
    { tx }: { tx: Tx },
    insert: RecordedInsert,
    about: (row: Record<string, unknown>) => NewEvent,
  ): Promise<{ row: Record<string, unknown>; event: Event } | null | undefined> {
    if (!isPostgres(tx)) return undefined;
    const probe = about(asStored({ ...insert.row, id: PLACEHOLDER_ID }));
    const version = this.checked(probe);
    const text = JSON.stringify(probe.data);
    const at = text.indexOf(PLACEHOLDER_TEXT);
    if (at < 0 || text.includes(PLACEHOLDER_TEXT, at + 1)) return undefined;
    const createdAt = this.clock.now().toISOString();
    const head = { accountId: probe.accountId, type: probe.type, version, createdAt };
    const steps = this.steps([head], false);
    const dataAround: [string, string] = [
      text.slice(0, at),
      text.slice(at + PLACEHOLDER_TEXT.length),
    ];
    const r = await repo.insertWithEvent(
      { tx },
      insert,
      { ...head, dataAround },
      this.notifier.channel,
      sent(steps),
    );
    if (!r) return null;
    // As record() hands it on: the data built from the row as the database returned it.
    const event: Event = { id: r.id, ...head, data: about(r.row).data };
    const rows = perHook(steps, r.rows);
    for (const [i, hook] of this.hooks.entries()) await hook.one(tx, event, rows[i]);
    return { row: r.row, event };
  }

  /**
   * Records the events in the caller's transaction, in this order, as record() one after the
   * other would: one multi-row insert, one statement of notifications, and the hooks given all
   * of them at once (a batch chunk's events).
   */
  async recordMany({ tx }: { tx: Tx }, list: NewEvent[]): Promise<Event[]> {
    if (list.length === 0) return [];
    const versions = list.map((e) => this.checked(e));
    const createdAt = this.clock.now().toISOString();
    const rows = list.map((e, i) => ({
      accountId: e.accountId,
      type: e.type,
      version: versions[i]!,
      data: e.data,
      createdAt,
    }));
    // PostgreSQL: one statement inserts, notifies and runs the hooks' steps (as record()).
    let ids: number[];
    let stepRows: (unknown[] | undefined)[] = [];
    if (isPostgres(tx)) {
      const steps = this.steps(rows, true);
      const r = await repo.insertManyNotifying({ tx }, rows, this.notifier.channel, sent(steps));
      ids = r.ids;
      stepRows = perHook(steps, r.rows);
    } else ids = await repo.insertMany({ tx }, rows);
    const events: Event[] = rows.map((r, i) => ({ id: ids[i]!, ...r }));
    if (!isPostgres(tx)) this.notifier.recorded();
    for (const [i, hook] of this.hooks.entries()) {
      if (hook.many) await hook.many(tx, events, stepRows[i]);
      else for (const event of events) await hook.one(tx, event);
    }
    return events;
  }

  /**
   * The version the event is recorded in. An unknown type, or data that does not match the
   * type's published schema, is a programming error: the change fails rather than publish a
   * shape the catalog does not describe.
   */
  private checked(e: NewEvent): string {
    const entry = this.catalog.currentOf(e.type);
    if (!entry) throw new Error(`event type ${e.type} is not in the catalog (spec/events)`);
    const problems = this.catalog.problems(e.type, entry.version, e.data);
    if (problems)
      throw new Error(`event ${e.type} v${entry.version} breaks its schema: ${problems}`);
    return entry.version;
  }

  async get(
    accountId: number,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<Event> {
    const e = id === null ? null : await repo.get({ tx }, accountId, id);
    // Past the retention an event is gone, even before the sweep deletes it.
    if (!e || e.createdAt < this.retainedSince()) throw new AppError('not_found');
    return e;
  }

  /** A page of the account's events, newest first by default (recording order). */
  async list(
    accountId: number,
    q: EventListQuery,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<PageResult<Event>> {
    const filters = {
      type: q.type,
      createdAfter: instantParam('created_after', q.created_after),
      createdBefore: instantParam('created_before', q.created_before),
    };
    return repo.page({ tx }, this.cursors, accountId, this.retainedSince(), filters, q);
  }

  /**
   * Calls `listener(accountId, eventId)` for every event once its transaction has committed, in
   * this process or (PostgreSQL) any other. Returns the unsubscribe function.
   */
  subscribe(listener: EventListener): () => void {
    return this.notifier.subscribe(listener);
  }

  /** Resolves once subscribers hear every event committed from now on. */
  listening(): Promise<void> {
    return this.notifier.listening();
  }

  /** The oldest instant still retained. */
  retainedSince(): string {
    return new Date(this.clock.now().getTime() - EVENT_RETENTION_MS).toISOString();
  }

  /** Deletes events past the 30-day retention, with their webhook deliveries and attempts. */
  async purgeExpired(): Promise<number> {
    // Their webhook deliveries and attempts go with them (ON DELETE CASCADE).
    return purgeInIdOrder(this.db, 'events', this.retainedSince(), PURGE_CHUNK);
  }

  close(): Promise<void> {
    return this.notifier.close();
  }
}
