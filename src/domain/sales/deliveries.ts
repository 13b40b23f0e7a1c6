// Deliveries: what a sale at a payment gateway grants. A delivery listens to gateway product ids
// (`external_ids`, each owned by one delivery of the account and gateway) and grants products
// (each under an access schedule, the product's default one unless told) and tags, for a duration
// or for life. Archiving stops new sales from granting anything; access already granted stays.
// Copies in replica accounts are read-only (403 replica_readonly). Takes an account id so the
// legacy v2 `/third/delivery` routes share the use cases.
import { inTransaction } from '../../db/tx.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { isUniqueViolation } from '../../db/dialect.ts';
import type { PageResult } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { AppError, type ErrorDetail } from '../../errors.ts';
import { guardedWrite } from '../shared/revision.ts';
import { replicaReadonly } from '../catalog/errors.ts';
import { parseDuration, type DurationUnit } from '../enrollments/duration.ts';
import { fieldError, rejection } from '../shared/rejections.ts';
import { GATEWAYS, gatewayOf, type Gateway } from './gateways.ts';
import { checkGrants } from './grants.ts';
import { hashSecret, newPostbackSecret, newPostbackToken } from './secrets.ts';
import {
  deliveriesRepo as repo,
  type Delivery,
  type DeliveryFields,
  type DeliveryKind,
  type DeliveryStatus,
} from './deliveries-repo.ts';

export interface DeliveryInput {
  name?: string;
  kind?: DeliveryKind;
  hidden?: boolean;
  external_ids?: string[];
  products?: { product_id: string; access_schedule_id?: string }[];
  tag_ids?: string[];
  duration?: number | null;
  duration_unit?: DurationUnit;
  /** Write-only; null removes it (only where the gateway does not require one). */
  secret?: string | null;
  /** On create, without `secret`: false opts out of the generated one (default true). */
  generate_secret?: boolean;
  status?: DeliveryStatus;
}

export interface DeliveryListQuery {
  sort?: 'created_at' | '-created_at';
  gateway?: string;
  status?: DeliveryStatus;
  external_id?: string;
  limit?: number;
  cursor?: string;
}

/** Trimmed, blank ones dropped, each once, in the order given. */
type Grants = Awaited<ReturnType<typeof checkGrants>>;

/** The delivery's own fields that `input` changes (422 on an invalid duration). */
function changes(input: DeliveryInput): Partial<DeliveryFields> {
  const c: Partial<DeliveryFields> = {};
  if (input.name !== undefined) c.name = input.name.trim();
  if (input.kind !== undefined) c.kind = input.kind;
  if (input.hidden !== undefined) c.hidden = input.hidden;
  if (input.status !== undefined) c.status = input.status;
  if (input.secret !== undefined)
    c.secretHash = input.secret === null ? null : hashSecret(input.secret);
  if (input.duration !== undefined || input.duration_unit !== undefined) {
    const duration = parseDuration(input);
    c.duration = duration.duration;
    c.durationUnit = duration.unit;
  }
  return c;
}

const cleanIds = (ids: string[]) => [...new Set(ids.map((s) => s.trim()).filter(Boolean))];

const taken = (ids: string[]) =>
  new AppError('already_exists', {
    details: ids.map((id) => ({
      field: 'external_ids',
      code: 'already_exists',
      message: `${id} belongs to another delivery of this gateway.`,
      reason: 'external_id_taken',
    })),
  });

export class DeliveriesService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  private readonly onWrite: (tx: Tx, d: Delivery) => Promise<void>;
  constructor(
    db: Db,
    clock: Clock,
    cursors: CursorCodec,
    onWrite: (tx: Tx, d: Delivery) => Promise<void> = async () => undefined,
  ) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.onWrite = onWrite;
  }

  private now = () => this.clock.now().toISOString();

  /** The gateway catalog (GET /sales/gateways). */
  gateways(): readonly Gateway[] {
    return GATEWAYS;
  }

  /**
   * What create would refuse in `input` beyond its schema, without writing (a plan checks its
   * deliveries when planning). A secret is write-only: plans, which are kept and shown, take
   * none (`write_only`). Fields are relative to the input.
   */
  problems(input: Partial<DeliveryInput> & { gateway?: string }): ErrorDetail[] {
    const out: ErrorDetail[] = [];
    if (input.gateway !== undefined && !gatewayOf(input.gateway))
      out.push({
        field: 'gateway',
        code: 'invalid_value',
        message: `Must be one of: ${GATEWAYS.map((g) => g.key).join(', ')}.`,
      });
    for (const field of ['secret', 'generate_secret'] as const)
      if (input[field] !== undefined)
        out.push({
          field,
          code: 'write_only',
          message: 'Not in a plan: set the secret with PATCH /sales/deliveries/{id}.',
        });
    if (input.duration !== undefined || input.duration_unit !== undefined)
      try {
        parseDuration(input);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        out.push(...err.details);
      }
    return out;
  }

  async get(
    accountId: number,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<Delivery> {
    const d = id === null ? null : await repo.get({ tx }, accountId, id);
    if (!d) throw new AppError('not_found');
    return d;
  }

  async list(
    accountId: number,
    q: DeliveryListQuery,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<PageResult<Delivery>> {
    const filters = { gateway: q.gateway, status: q.status, externalId: q.external_id };
    return repo.page({ tx }, this.cursors, accountId, filters, q);
  }

  /**
   * A new, active delivery. The gateway decides whether `secret` is required; where it is not,
   * and none is given, one is generated unless `generate_secret: false` (it is returned once, in
   * `generatedSecret`): a delivery without a secret takes any postback that knows its URL.
   */
  async create(
    accountId: number,
    input: DeliveryInput & { gateway: string; name: string },
    opts: { tx?: Tx } = {},
  ): Promise<Delivery & { generatedSecret?: string }> {
    const gateway = gatewayOf(input.gateway);
    if (!gateway)
      throw fieldError(
        'gateway',
        'invalid_value',
        `Must be one of: ${GATEWAYS.map((g) => g.key).join(', ')}.`,
        'unknown_gateway',
      );
    if (gateway.secretRequired && !input.secret)
      throw fieldError('secret', 'required', 'This gateway requires a secret.', 'secret_required');
    const duration = parseDuration(input);
    const generated =
      !input.secret && input.generate_secret !== false ? newPostbackSecret() : undefined;
    const secret = input.secret || generated;
    return inTransaction(this.db, opts.tx, async (tx) => {
      const grants = await checkGrants(
        { tx },
        accountId,
        input.products ?? [],
        input.tag_ids ?? [],
      );
      const externalIds = cleanIds(input.external_ids ?? []);
      const owners = await repo.owners({ tx }, accountId, gateway.key, externalIds);
      if (owners.length) throw taken(owners.map((o) => o.externalId));
      const id = await repo.insert(
        { tx },
        {
          accountId,
          sourceId: null,
          gateway: gateway.key,
          name: input.name.trim(),
          kind: input.kind ?? 'one_time',
          status: 'active',
          hidden: input.hidden ?? false,
          secretHash: secret ? hashSecret(secret) : null,
          postbackToken: newPostbackToken(),
          duration: duration.duration,
          durationUnit: duration.unit,
        },
        this.now(),
      );
      await this.writeRelations(
        { tx },
        { id, accountId, gateway: gateway.key },
        externalIds,
        grants,
      );
      const d = await this.written({ tx }, accountId, id);
      return generated ? { ...d, generatedSecret: generated } : d;
    });
  }

  /**
   * Only present fields change; lists (external_ids, products, tag_ids) are replaced whole.
   * `status` needs deliveries.archive besides deliveries.update: `mayArchive` says whether the
   * caller holds it (the legacy routes, whose key may do everything, pass true).
   */
  async update(
    accountId: number,
    id: number | null,
    input: DeliveryInput,
    ifMatch: string | undefined,
    opts: { tx?: Tx; mayArchive: boolean },
  ): Promise<Delivery> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      // Read-only copy and the archive permission are refused before If-Match is looked at.
      const load = async () => {
        const d = await this.get(accountId, id, { tx });
        if (d.sourceId !== null) throw replicaReadonly(Object.keys(input));
        if (input.status !== undefined && !opts.mayArchive)
          throw new AppError('permission_denied', {
            details: [
              {
                code: 'missing_permission',
                message: 'deliveries.archive',
                reason: 'deliveries.archive',
              },
            ],
          });
        return d;
      };
      let relations: { externalIds?: string[]; grants?: Grants } = {};
      const d = await guardedWrite({
        load,
        ifMatch,
        write: async (d, guard) => {
          const checked = await this.checkChanges({ tx }, d, input);
          relations = checked;
          return repo.update({ tx }, d.id, checked.fields, this.now(), guard);
        },
      });
      await this.writeRelations({ tx }, d, relations.externalIds, relations.grants);
      return this.written({ tx }, accountId, d.id);
    });
  }

  /** The rules a change must pass (422, 409); returns the lists it replaces, checked. */
  private async checkChanges({ tx }: { tx: Tx }, d: Delivery, input: DeliveryInput) {
    const accountId = d.accountId;
    const gateway = gatewayOf(d.gateway);
    if (input.secret === null && gateway?.secretRequired)
      throw fieldError('secret', 'required', 'This gateway requires a secret.', 'secret_required');
    const fields = changes(input);
    const grants =
      input.products !== undefined || input.tag_ids !== undefined
        ? await checkGrants(
            { tx },
            accountId,
            input.products ??
              d.products.map((p) => ({
                product_id: String(p.productId),
                access_schedule_id: String(p.accessScheduleId),
              })),
            input.tag_ids ?? d.tagIds.map(String),
          )
        : undefined;
    let externalIds: string[] | undefined;
    if (input.external_ids !== undefined) {
      externalIds = cleanIds(input.external_ids);
      const owners = await repo.owners({ tx }, accountId, d.gateway, externalIds);
      const others = owners.filter((o) => o.deliveryId !== d.id);
      if (others.length) throw taken(others.map((o) => o.externalId));
    }
    if (input.status === 'active' && d.status === 'archived') {
      const schedules = (grants?.products ?? d.products).map((p) => p.accessScheduleId);
      if ((await repo.trashedSchedules({ tx }, schedules)).length)
        throw rejection(
          'state_conflict',
          'schedule_in_trash',
          'An access schedule this delivery grants is in the trash: restore it first.',
        );
    }
    return { fields, externalIds, grants };
  }

  /**
   * The v2 `POST /third/delivery` rule: makes a delivery of the gateway listen to every id. When
   * a delivery already has some of them, it gets the missing ones (its name and kind stay); when
   * none has them, a new delivery is created with `name` and `kind`. Ids owned by two different
   * deliveries are refused (409 already_exists, reason `external_id_taken`).
   */
  async ensureListening(
    accountId: number,
    input: { gateway: string; external_ids: string[]; name: string; kind?: DeliveryKind },
    opts: { tx?: Tx } = {},
  ): Promise<{ delivery: Delivery; created: boolean }> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const ids = cleanIds(input.external_ids);
      const owners = await repo.owners({ tx }, accountId, input.gateway, ids);
      const deliveries = [...new Set(owners.map((o) => o.deliveryId))];
      if (deliveries.length > 1)
        throw taken(owners.filter((o) => o.deliveryId !== deliveries[0]).map((o) => o.externalId));
      if (!deliveries.length) {
        // v2 has no field to show a secret in: its `config_url` (with the token) is what the
        // gateway is given, so no secret is generated that nobody could ever read.
        const d = await this.create(
          accountId,
          {
            gateway: input.gateway,
            name: input.name,
            kind: input.kind,
            external_ids: ids,
            generate_secret: false,
          },
          { tx },
        );
        return { delivery: d, created: true };
      }
      const d = (await repo.get({ tx }, accountId, deliveries[0]!))!;
      const missing = ids.filter((i) => !d.externalIds.includes(i));
      if (!missing.length) return { delivery: d, created: false };
      const updated = await this.update(
        accountId,
        d.id,
        { external_ids: [...d.externalIds, ...missing] },
        undefined,
        { tx, mayArchive: false },
      );
      return { delivery: updated, created: false };
    });
  }

  /** A sandbox reset: every delivery of the account (their transactions go with them). */
  async resetAccount({ tx }: { tx: Tx }, accountId: number): Promise<number> {
    return repo.removeAccount({ tx }, accountId);
  }

  private async writeRelations(
    { tx }: { tx: Tx },
    d: { id: number; accountId: number; gateway: string },
    externalIds: string[] | undefined,
    grants: Awaited<ReturnType<typeof checkGrants>> | undefined,
  ) {
    try {
      if (externalIds !== undefined) await repo.setExternalIds({ tx }, d, externalIds);
    } catch (err) {
      // A concurrent write took an id between our check and our insert.
      if (isUniqueViolation(err)) throw taken(externalIds!);
      throw err;
    }
    if (grants) {
      await repo.setProducts({ tx }, d.id, grants.products);
      await repo.setTags({ tx }, d.id, grants.tagIds);
    }
  }

  /** Reads the delivery back and brings its copies in replica accounts up to date. */
  private async written({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Delivery> {
    const d = (await repo.get({ tx }, accountId, id))!;
    await this.onWrite(tx, d);
    return d;
  }
}
