// Event streams: durable subscriptions to an account's events, followed as Server-Sent Events.
// A stream belongs to the credential that created it (at most 5 per credential, 20 per account);
// only that credential may connect, one connection at a time across every instance (a lease in
// the row). A connection resumes after Last-Event-ID, else after `cursor`, else where the stream
// last stopped; a cursor past the 30-day retention is 410 cursor_expired.
import crypto from 'node:crypto';
import type { Clock } from '../../clock.ts';
import type { Db, Tx } from '../../db/knex.ts';
import { inTransaction } from '../../db/tx.ts';
import { AppError } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import type { AuthContext } from '../credentials/auth.ts';
import type { CredentialsService } from '../credentials/service.ts';
import type { EventsService } from '../events/service.ts';
import { LEASE_MS, StreamConnection } from './connection.ts';
import { AccountReader } from './reader.ts';
import { streamsRepo as repo, type EventStream } from './repo.ts';

export const MAX_PER_CREDENTIAL = 5;
export const MAX_PER_ACCOUNT = 20;
const DEFAULT_HEARTBEAT_SECONDS = 15;
/** How long a shutdown waits for a client to take the end of its stream. */
const SHUTDOWN_GRACE_MS = 2_000;

export interface OpenOptions {
  /** The Last-Event-ID header. */
  lastEventId?: string;
  cursor?: string;
  heartbeatSeconds?: number;
}

export class StreamsService {
  private readonly open = new Set<StreamConnection>();
  /** One shared reader per account with open connections in this process. */
  private readonly readers = new Map<number, AccountReader>();
  private unsubscribe: (() => void) | undefined;
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly events: Pick<EventsService, 'subscribe' | 'retainedSince'>;
  private readonly credentials: Pick<CredentialsService, 'currentStatus'>;

  constructor(
    db: Db,
    clock: Clock,
    logger: Logger,
    events: Pick<EventsService, 'subscribe' | 'retainedSince'>,
    credentials: Pick<CredentialsService, 'currentStatus'>,
  ) {
    this.db = db;
    this.clock = clock;
    this.logger = logger;
    this.events = events;
    this.credentials = credentials;
  }

  async create(
    auth: AuthContext,
    input: { types?: string[] },
    opts: { tx?: Tx } = {},
  ): Promise<EventStream> {
    const accountId = auth.account.id;
    return inTransaction(this.db, opts.tx, async (tx) => {
      await repo.lockAccount({ tx }, accountId);
      const counts = await repo.counts({ tx }, accountId, auth.credential.id);
      if (counts.credential >= MAX_PER_CREDENTIAL || counts.account >= MAX_PER_ACCOUNT) {
        const per = counts.credential >= MAX_PER_CREDENTIAL ? 'credential' : 'account';
        throw new AppError('too_many_streams', {
          details: [
            {
              code: 'too_many_streams',
              message: `At most ${per === 'credential' ? MAX_PER_CREDENTIAL : MAX_PER_ACCOUNT} streams per ${per}.`,
              reason: `${per}_limit`,
            },
          ],
        });
      }
      const id = await repo.insert(
        { tx },
        {
          account_id: accountId,
          credential_id: auth.credential.id,
          types: input.types ? JSON.stringify(input.types) : null,
          position: await repo.newestEventId({ tx }, accountId),
          created_at: this.clock.now().toISOString(),
        },
      );
      return (await repo.get({ tx }, accountId, id))!;
    });
  }

  async get(accountId: number, id: number | null): Promise<EventStream> {
    const s = id === null ? null : await repo.get({ tx: this.db }, accountId, id);
    if (!s) throw new AppError('not_found');
    return s;
  }

  list(accountId: number): Promise<EventStream[]> {
    return repo.list({ tx: this.db }, accountId);
  }

  /** An open connection notices within a tick (at most 5 s) and closes. */
  async remove(accountId: number, id: number | null, opts: { tx?: Tx } = {}): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      if (id === null || (await repo.remove({ tx }, accountId, id)) === 0)
        throw new AppError('not_found');
    });
  }

  /** A connection holds the stream's lease, which it renews on every tick. */
  isConnected(s: EventStream): boolean {
    return (
      s.connectionId !== null && (s.connectionExpiresAt ?? '') >= this.clock.now().toISOString()
    );
  }

  /** Checks everything that can refuse the connection, takes the lease, and starts it. */
  async connect(auth: AuthContext, id: number | null, o: OpenOptions): Promise<StreamConnection> {
    const accountId = auth.account.id;
    const s = await this.get(accountId, id);
    // Another credential's stream is not there for this one, even inside the account.
    if (s.credentialId !== auth.credential.id) throw new AppError('not_found');
    const raw = o.lastEventId?.trim() || o.cursor;
    const position = raw === undefined ? s.position : await this.resumePoint(accountId, raw);
    const connectionId = crypto.randomUUID();
    const now = this.clock.now();
    const until = new Date(now.getTime() + LEASE_MS).toISOString();
    const taken = await inTransaction(this.db, undefined, (tx) =>
      repo.acquire({ tx }, s.id, connectionId, now.toISOString(), until),
    );
    if (!taken) throw new AppError('stream_busy');
    const credentialId = auth.credential.id;
    let reader = this.readers.get(accountId);
    if (!reader) {
      const deps = {
        db: this.db,
        clock: this.clock,
        logger: this.logger,
        retainedSince: () => this.events.retainedSince(),
      };
      reader = new AccountReader(deps, accountId, position);
      this.readers.set(accountId, reader);
    }
    const connection = new StreamConnection(
      {
        db: this.db,
        clock: this.clock,
        logger: this.logger,
        credentialStatus: () => this.credentials.currentStatus(accountId, credentialId),
        retainedSince: () => this.events.retainedSince(),
      },
      {
        streamId: s.id,
        accountId,
        connectionId,
        types: s.types,
        position,
        heartbeatMs: (o.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS) * 1000,
      },
      reader,
      (c) => {
        this.open.delete(c);
        if (![...this.open].some((o) => o.accountId === c.accountId))
          this.readers.delete(c.accountId);
      },
    );
    this.open.add(connection);
    this.unsubscribe ??= this.events.subscribe((account) => {
      // One read for the account's followers; the connections behind read their own backlog.
      this.readers.get(account)?.wake();
      for (const c of this.open) if (c.accountId === account && !c.following) c.wake();
    });
    connection.start();
    return connection;
  }

  /**
   * An event id of the account still retained. `0` means "from the oldest retained event". An
   * id older than every stored event, or an event past the retention, is 410 cursor_expired;
   * anything else that names no event of the account is 400 invalid_cursor.
   */
  private async resumePoint(accountId: number, raw: string): Promise<number> {
    if (!/^(0|[1-9][0-9]{0,9})$/.test(raw)) throw new AppError('invalid_cursor');
    const id = Number(raw);
    if (id === 0) return 0;
    const event = await repo.event({ tx: this.db }, accountId, id);
    if (event) {
      if (event.createdAt < this.events.retainedSince()) throw new AppError('cursor_expired');
      return id;
    }
    const oldest = await repo.oldestEventId({ tx: this.db });
    if (oldest === 0 || id < oldest) throw new AppError('cursor_expired');
    throw new AppError('invalid_cursor');
  }

  /** Server shutdown: every open connection ends (clients reconnect elsewhere). */
  async closeAll(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await Promise.all([...this.open].map((c) => c.shutdown(SHUTDOWN_GRACE_MS)));
  }
}
