// Webhook endpoints (destinations): register (the signing secret is shown once), change, disable,
// delete, rotate the secret with an overlap. Their deliveries are read and replayed through
// ./deliveries.ts and carried out by ./dispatcher.ts.
import type { Clock } from '../../clock.ts';
import { HOUR } from '../../clock.ts';
import type { Db, Tx } from '../../db/engine.ts';
import { inTransaction } from '../../db/tx.ts';
import { lockAccountScope } from '../../db/account-lock.ts';
import { rejection } from '../shared/rejections.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { PageResult } from '../../db/page.ts';
import { AppError, type ErrorDetail } from '../../errors.ts';
import { seal, unseal } from '../../secrets-key.ts';
import type { EventCatalog } from '../events/catalog.ts';
import { newRevision } from '../shared/ids.ts';
import { assertRevision } from '../shared/revision.ts';
import { deliveriesRepo } from './deliveries-repo.ts';
import { secretContext } from './schedule.ts';
import { endpointsRepo as repo, type Endpoint, type EndpointStatus } from './repo.ts';
import { SECRET_PREFIX } from './signature.ts';
import { newSigningSecret } from './signature.ts';
import { checkTarget } from './targets.ts';

const MAX_OVERLAP_HOURS = 72;
/** Every event fans out to every endpoint: a bound on the fan-out (409 plan_limit_reached). */
export const MAX_ENDPOINTS = 20;

export interface EndpointInput {
  url: string;
  description?: string | null;
  event_types: string[];
  payload_version?: string;
}

export interface EndpointChanges {
  url?: string;
  description?: string | null;
  event_types?: string[];
  status?: EndpointStatus;
}

const fieldError = (field: string, code: string, message: string) =>
  new AppError('validation_failed', { details: [{ field, code, message }] });

export class WebhooksService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  private readonly secretsKey: Buffer;
  private readonly catalog: EventCatalog;
  private readonly allowPrivateTargets: boolean;
  constructor(
    db: Db,
    clock: Clock,
    cursors: CursorCodec,
    secretsKey: Buffer,
    catalog: EventCatalog,
    allowPrivateTargets: boolean,
  ) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.secretsKey = secretsKey;
    this.catalog = catalog;
    this.allowPrivateTargets = allowPrivateTargets;
  }

  /** Public catalog types, or `*`; each once. */
  private eventTypes(types: string[]): string[] {
    const known = new Set(this.catalog.publicTypes());
    const bad: ErrorDetail[] = [];
    types.forEach((t, i) => {
      if (t !== '*' && !known.has(t))
        bad.push({
          field: `event_types.${i}`,
          code: 'invalid_value',
          message: `Not an event type of the catalog (GET /event-types): ${t}.`,
        });
    });
    if (bad.length) throw new AppError('validation_failed', { details: bad });
    return [...new Set(types)];
  }

  /**
   * What create would refuse in this input beyond its schema (a private or malformed URL, an event
   * type outside the catalog, an unknown payload version), without writing: plans report it at
   * planning time. Fields are relative to the input.
   */
  problems(input: Partial<EndpointInput>): ErrorDetail[] {
    const out: ErrorDetail[] = [];
    const collect = (check: () => unknown) => {
      try {
        check();
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        out.push(...err.details);
      }
    };
    if (input.url !== undefined) collect(() => checkTarget(input.url!, this.allowPrivateTargets));
    if (input.event_types !== undefined) collect(() => this.eventTypes(input.event_types!));
    const versions = this.catalog.versions();
    if (input.payload_version !== undefined && !versions.includes(input.payload_version))
      out.push({
        field: 'payload_version',
        code: 'invalid_value',
        message: `One of: ${versions.join(', ')}.`,
      });
    return out;
  }

  async get(
    accountId: number,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<Endpoint> {
    const e = id === null ? null : await repo.get({ tx }, accountId, id);
    if (!e) throw new AppError('not_found');
    return e;
  }

  /** With the secrets that sign its deliveries now (what GET shows). */
  async read(accountId: number, id: number | null): Promise<Endpoint> {
    return (await this.withSecrets({ tx: this.db }, [await this.get(accountId, id)]))[0]!;
  }

  /** Each endpoint with `signingSecrets`: the hint (`whsec_` and 4 characters) of each one. */
  private async withSecrets({ tx }: { tx: Tx }, endpoints: Endpoint[]): Promise<Endpoint[]> {
    const now = this.clock.now().toISOString();
    const rows = await repo.activeSecrets(
      { tx },
      endpoints.map((e) => e.id),
      now,
    );
    return endpoints.map((e) => ({
      ...e,
      signingSecrets: rows
        .filter((r) => Number(r.endpoint_id) === e.id)
        .map((r) => {
          const secret = unseal(this.secretsKey, r.sealed, secretContext(e.id));
          return {
            hint: `${secret.slice(0, SECRET_PREFIX.length + 4)}...`,
            createdAt: r.created_at,
            expiresAt: r.expires_at ?? null,
          };
        }),
    }));
  }

  async list(
    accountId: number,
    q: { status?: EndpointStatus; limit?: number; cursor?: string },
  ): Promise<PageResult<Endpoint>> {
    const { limit, cursor } = q;
    const page = await repo.page(
      { tx: this.db },
      this.cursors,
      accountId,
      { status: q.status },
      { limit, cursor },
    );
    return { rows: await this.withSecrets({ tx: this.db }, page.rows), page: page.page };
  }

  /** Registers an endpoint; its signing secret is returned here and never again. */
  async create(
    accountId: number,
    input: EndpointInput,
    opts: { tx?: Tx } = {},
  ): Promise<{ endpoint: Endpoint; secret: string }> {
    const url = checkTarget(input.url, this.allowPrivateTargets);
    const eventTypes = this.eventTypes(input.event_types);
    const versions = this.catalog.versions();
    const payloadVersion = input.payload_version ?? versions[versions.length - 1] ?? '1';
    if (!versions.includes(payloadVersion))
      throw fieldError('payload_version', 'invalid_value', `One of: ${versions.join(', ')}.`);
    const now = this.clock.now().toISOString();
    const secret = newSigningSecret();
    return inTransaction(this.db, opts.tx, async (tx) => {
      await lockAccountScope({ tx }, 'webhook_endpoints', accountId);
      if ((await repo.count({ tx }, accountId)) >= MAX_ENDPOINTS)
        throw rejection(
          'plan_limit_reached',
          'webhook_endpoints',
          `An account has at most ${MAX_ENDPOINTS} webhooks: delete one first.`,
        );
      const id = await repo.insert(
        { tx },
        {
          account_id: accountId,
          url,
          description: input.description?.trim() || null,
          event_types: JSON.stringify(eventTypes),
          payload_version: payloadVersion,
          status: 'enabled',
          disabled_reason: null,
          revision: newRevision(),
          created_at: now,
          updated_at: now,
        },
      );
      await repo.insertSecret({ tx }, id, seal(this.secretsKey, secret, secretContext(id)), now);
      const [endpoint] = await this.withSecrets({ tx }, [(await repo.get({ tx }, accountId, id))!]);
      return { endpoint: endpoint!, secret };
    });
  }

  /** `payload_version` is pinned at registration. Disabling cancels what was waiting to be sent. */
  async update(
    accountId: number,
    id: number | null,
    input: EndpointChanges,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<Endpoint> {
    const changes: Record<string, unknown> = {};
    if (input.url !== undefined) changes.url = checkTarget(input.url, this.allowPrivateTargets);
    if (input.event_types !== undefined)
      changes.event_types = JSON.stringify(this.eventTypes(input.event_types));
    if (input.description !== undefined) changes.description = input.description?.trim() || null;
    if (input.status !== undefined) {
      changes.status = input.status;
      changes.disabled_reason = input.status === 'disabled' ? 'disabled_by_client' : null;
    }
    const now = this.clock.now().toISOString();
    return inTransaction(this.db, opts.tx, async (tx) => {
      const e = await this.get(accountId, id, { tx });
      assertRevision(ifMatch, e.revision);
      // Re-disabling keeps the first reason (a 410 stays the reason an endpoint went quiet).
      if (input.status === 'disabled' && e.status === 'disabled')
        changes.disabled_reason = e.disabledReason;
      Object.assign(changes, { revision: newRevision(), updated_at: now });
      const guard = ifMatch === undefined ? undefined : e.revision;
      if ((await repo.update({ tx }, e.id, changes, guard)) === 0)
        throw new AppError(ifMatch === undefined ? 'not_found' : 'revision_mismatch');
      if (input.status === 'disabled') await deliveriesRepo.cancelOpen({ tx }, e.id, now);
      return (await this.withSecrets({ tx }, [(await repo.get({ tx }, accountId, e.id))!]))[0]!;
    });
  }

  /** Deleted endpoints receive nothing more; their waiting deliveries are canceled. */
  async remove(
    accountId: number,
    id: number | null,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<void> {
    const now = this.clock.now().toISOString();
    await inTransaction(this.db, opts.tx, async (tx) => {
      const e = await this.get(accountId, id, { tx });
      assertRevision(ifMatch, e.revision);
      const guard = ifMatch === undefined ? undefined : e.revision;
      const hit = await repo.update(
        { tx },
        e.id,
        { status: 'disabled', deleted_at: now, revision: newRevision(), updated_at: now },
        guard,
      );
      if (hit === 0) throw new AppError(ifMatch === undefined ? 'not_found' : 'revision_mismatch');
      await deliveriesRepo.cancelOpen({ tx }, e.id, now);
    });
  }

  /**
   * A new signing secret, returned once. The current one keeps signing for `overlapHours`
   * (default 24, at most 72): meanwhile every delivery carries both signatures. A secret still in
   * an earlier rotation's overlap stops at once, so at most two sign. Rotations of one endpoint
   * take turns on its row (PostgreSQL; SQLite runs one transaction at a time): ten at once leave
   * one secret per rotation expired, not ten that never expire.
   */
  async rotateSecret(
    accountId: number,
    id: number | null,
    overlapHours = 24,
    opts: { tx?: Tx } = {},
  ): Promise<{ secret: string; previousExpiresAt: string }> {
    if (!Number.isInteger(overlapHours) || overlapHours < 0 || overlapHours > MAX_OVERLAP_HOURS)
      throw fieldError('overlap_hours', 'too_large', `At most ${MAX_OVERLAP_HOURS}.`);
    const now = this.clock.now();
    const until = new Date(now.getTime() + overlapHours * HOUR).toISOString();
    const secret = newSigningSecret();
    return inTransaction(this.db, opts.tx, async (tx) => {
      if (id !== null) await repo.lockRow({ tx }, id);
      const e = await this.get(accountId, id, { tx });
      await repo.expireSecrets({ tx }, e.id, now.toISOString(), until);
      await repo.insertSecret(
        { tx },
        e.id,
        seal(this.secretsKey, secret, secretContext(e.id)),
        now.toISOString(),
      );
      return { secret, previousExpiresAt: until };
    });
  }
}
