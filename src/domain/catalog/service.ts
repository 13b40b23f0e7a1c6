// The catalog: products, their modules and their access schedules, and their copies in replica
// accounts. Takes an account id (like UsersService) so other entry points (operations, batches,
// sandbox resets) can share the use cases. Modules and schedules live in their own services,
// reached as `catalog.modules` and `catalog.schedules`.
import { inTransaction } from '../../db/tx.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import type { PageResult } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { AppError } from '../../errors.ts';
import { guardedWrite } from '../shared/revision.ts';
import type { TagsService } from '../tags/service.ts';
import { productsRepo, type ProductFields } from './repo.ts';
import { modulesRepo } from './modules-repo.ts';
import { replicaReadonly } from './errors.ts';
import { ModulesService } from './modules.ts';
import { ReplicaSync } from './replicas.ts';
import { SchedulesService } from './schedules.ts';
import type { Product, PublicationStatus } from './types.ts';
import { noEvents, type EventRecorder } from '../events/types.ts';

export interface ProductInput {
  name?: string;
  description?: string | null;
  status?: PublicationStatus;
}

export interface ProductListQuery {
  sort?: 'created_at' | '-created_at';
  status?: PublicationStatus;
  limit?: number;
  cursor?: string;
}

/** Trimmed; a blank description means "no description". */
const text = (v: string | null | undefined): string | null => v?.trim() || null;

export class CatalogService {
  readonly schedules: SchedulesService;
  readonly modules: ModulesService;
  private readonly replicas: ReplicaSync;
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  private readonly events: EventRecorder;

  constructor(
    db: Db,
    clock: Clock,
    cursors: CursorCodec,
    tags: TagsService,
    events: EventRecorder = noEvents,
  ) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.events = events;
    this.schedules = new SchedulesService(db, clock, cursors, tags);
    this.replicas = new ReplicaSync(clock, this.schedules);
    this.modules = new ModulesService(db, clock, cursors, this.replicas);
  }

  async get(
    accountId: number,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<Product> {
    const p = id === null ? null : await productsRepo.get({ tx }, accountId, id);
    if (!p) throw new AppError('not_found');
    return p;
  }

  async list(
    accountId: number,
    q: ProductListQuery,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<PageResult<Product>> {
    return productsRepo.page({ tx }, this.cursors, accountId, { status: q.status }, q);
  }

  /** The product, its default access schedule (and tag), and its copies in replica accounts. */
  async create(
    accountId: number,
    input: ProductInput & { name: string },
    opts: { tx?: Tx } = {},
  ): Promise<Product> {
    const now = this.clock.now().toISOString();
    return inTransaction(this.db, opts.tx, async (tx) => {
      const id = await productsRepo.insert(
        { tx },
        {
          accountId,
          sourceId: null,
          name: input.name.trim(),
          description: text(input.description),
          status: input.status ?? 'draft',
        },
        now,
      );
      const p = (await productsRepo.get({ tx }, accountId, id))!;
      await this.schedules.createDefault({ tx }, p);
      await this.replicas.product({ tx }, p, true);
      return p;
    });
  }

  /** Only present fields change. A copy accepts only `status` (403 replica_readonly). */
  async update(
    accountId: number,
    id: number | null,
    input: ProductInput,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<Product> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const changes: Partial<ProductFields> = {};
      if (input.name !== undefined) changes.name = input.name.trim();
      if (input.description !== undefined) changes.description = text(input.description);
      if (input.status !== undefined) changes.status = input.status;
      const p = await guardedWrite({
        // A copy's read-only fields are refused before If-Match is looked at (403, not 412).
        load: async () => {
          const p = await this.get(accountId, id, { tx });
          const readonly = Object.keys(input).filter((k) => k !== 'status');
          if (p.sourceId !== null && readonly.length) throw replicaReadonly(readonly);
          return p;
        },
        ifMatch,
        write: (p, guard) =>
          productsRepo.update({ tx }, p.id, changes, this.clock.now().toISOString(), guard),
      });
      const updated = (await productsRepo.get({ tx }, accountId, p.id))!;
      await this.replicas.product({ tx }, updated, input.status !== undefined);
      return updated;
    });
  }

  /** Removes the product, its modules, schedules and copies; the schedules' tags stay. */
  async remove(
    accountId: number,
    id: number | null,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      await guardedWrite({
        load: async () => {
          const p = await this.get(accountId, id, { tx });
          if (p.sourceId !== null) throw replicaReadonly();
          return p;
        },
        ifMatch,
        write: (p, guard) => productsRepo.remove({ tx }, p.id, guard),
      });
    });
  }

  /**
   * Sets the product and every module of it outside the trash to `published`, and their copies in
   * replica accounts too, in the caller's transaction. A copy cannot be published from its
   * replica account (403 replica_readonly). Returns the product.
   */
  async publishProduct(
    { tx }: { tx: Tx },
    accountId: number,
    productId: number | null,
  ): Promise<Product> {
    const p = await this.get(accountId, productId, { tx });
    if (p.sourceId !== null) throw replicaReadonly();
    const now = () => this.clock.now().toISOString();
    const toPublished = { status: 'published' } as const;
    if (p.status !== 'published') await productsRepo.update({ tx }, p.id, toPublished, now());
    const published = (await productsRepo.get({ tx }, accountId, p.id))!;
    await this.replicas.product({ tx }, published, true);
    for (const m of await modulesRepo.activeOfProduct({ tx }, p.id)) {
      if (m.status !== 'published') await modulesRepo.update({ tx }, m.id, toPublished, now());
      await this.replicas.module(
        { tx },
        (await modulesRepo.get({ tx }, accountId, p.id, m.id))!,
        true,
      );
    }
    await this.events.record(
      { tx },
      {
        accountId,
        type: 'product.published',
        data: { product: { id: String(published.id), name: published.name, status: 'published' } },
      },
    );
    return published;
  }

  /**
   * Deletes every catalog row of the account (products, modules, schedules) and, with them, their
   * copies in replica accounts. Tags, including schedules' tags, are not catalog rows: they stay.
   */
  async resetAccount({ tx }: { tx: Tx }, accountId: number): Promise<void> {
    await productsRepo.removeAccount({ tx }, accountId);
  }
}
