// Access schedules of a product. Each owns a tag of the same account: the schedule's name is its
// tag's name, so names follow the tags' rules (trimmed, unique per account ignoring case: 409
// already_exists) and renaming either renames both. A product is born with its default schedule.
import { inTransaction } from '../../db/tx.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import type { PageResult } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { AppError } from '../../errors.ts';
import { etag, guardedWrite } from '../shared/revision.ts';
import { tagsRepo } from '../tags/repo.ts';
import type { TagsService } from '../tags/service.ts';
import { productsRepo } from './repo.ts';
import { schedulesRepo, type Delivery } from './schedules-repo.ts';
import { replicaReadonly, stateConflict } from './errors.ts';
import { revisionOf, type AccessSchedule, type Product } from './types.ts';

export type ScheduleView = AccessSchedule & { deliveries: Delivery[] };

export interface ScheduleListQuery {
  sort?: 'created_at' | '-created_at';
  deleted?: boolean;
  limit?: number;
  cursor?: string;
}

/** Tag names hold 100 characters (code points, as PostgreSQL's varchar counts them). */
const TAG_NAME_MAX = 100;
const cut = (s: string, n: number) => [...s].slice(0, n).join('').trim();

export class SchedulesService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  private readonly tags: TagsService;
  constructor(db: Db, clock: Clock, cursors: CursorCodec, tags: TagsService) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.tags = tags;
  }

  private async product(
    { tx }: { tx: Tx },
    accountId: number,
    productId: number | null,
  ): Promise<Product> {
    const p = productId === null ? null : await productsRepo.get({ tx }, accountId, productId);
    if (!p) throw new AppError('not_found');
    return p;
  }

  private async view({ tx }: { tx: Tx }, s: AccessSchedule): Promise<ScheduleView> {
    return { ...s, deliveries: await schedulesRepo.deliveries({ tx }, s.id) };
  }

  private async find(
    { tx }: { tx: Tx },
    accountId: number,
    productId: number | null,
    id: number | null,
  ) {
    const p = await this.product({ tx }, accountId, productId);
    const s = id === null ? null : await schedulesRepo.get({ tx }, accountId, p.id, id);
    if (!s) throw new AppError('not_found');
    return s;
  }

  /**
   * The default schedule of a new product (or of a copy in a replica account). Its tag is named
   * after the product; when the account has a tag of that name, ` #<product id>` is appended
   * (and `-2`, `-3`... in the unlikely case that is taken too).
   */
  async createDefault({ tx }: { tx: Tx }, product: Product): Promise<void> {
    let name = cut(product.name, TAG_NAME_MAX);
    for (let i = 1; await tagsRepo.findByName({ tx }, product.accountId, name.toLowerCase()); i++) {
      const suffix = i === 1 ? ` #${product.id}` : ` #${product.id}-${i}`;
      name = cut(product.name, TAG_NAME_MAX - suffix.length) + suffix;
    }
    // Born with the product: same instant.
    await this.insert({ tx }, product, name, true, product.createdAt);
  }

  private async insert(
    { tx }: { tx: Tx },
    product: Product,
    name: string,
    isDefault: boolean,
    now = this.clock.now().toISOString(),
  ) {
    const tag = await this.tags.create(product.accountId, { name }, { tx });
    return schedulesRepo.insert(
      { tx },
      {
        accountId: product.accountId,
        productId: product.id,
        tagId: tag.id,
        isDefault,
        deleted: false,
      },
      now,
    );
  }

  async list(
    accountId: number,
    productId: number | null,
    q: ScheduleListQuery,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<PageResult<ScheduleView>> {
    const p = await this.product({ tx }, accountId, productId);
    const deleted = q.deleted ?? false;
    const page = await schedulesRepo.page({ tx }, this.cursors, accountId, p.id, { deleted }, q);
    const rows = await Promise.all(page.rows.map((s) => this.view({ tx }, s)));
    return { rows, page: page.page };
  }

  async get(
    accountId: number,
    productId: number | null,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<ScheduleView> {
    return this.view({ tx }, await this.find({ tx }, accountId, productId, id));
  }

  async create(
    accountId: number,
    productId: number | null,
    input: { name: string },
    opts: { tx?: Tx } = {},
  ): Promise<ScheduleView> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const p = await this.product({ tx }, accountId, productId);
      if (p.sourceId !== null) throw replicaReadonly();
      const id = await this.insert({ tx }, p, input.name, false);
      return this.view({ tx }, (await schedulesRepo.get({ tx }, accountId, p.id, id))!);
    });
  }

  async update(
    accountId: number,
    productId: number | null,
    id: number | null,
    input: { name?: string; deleted?: boolean },
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<ScheduleView> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const deleted = (s: AccessSchedule) => input.deleted ?? s.deleted;
      const s = await guardedWrite({
        load: () => this.load({ tx }, accountId, productId, id, Object.keys(input)),
        ifMatch,
        check: async (s) => {
          if (deleted(s) && input.name !== undefined) throw stateConflict('in_trash');
          if (deleted(s) && !s.deleted) await this.assertTrashable({ tx }, s);
        },
        write: async (s, guard) => {
          if (input.name !== undefined) {
            // The tag's own revision guards it the same way If-Match guards the schedule.
            const tagMatch = guard === undefined ? undefined : etag(s.tagRevision);
            await this.tags.rename(accountId, s.tagId, { name: input.name }, tagMatch, { tx });
          }
          const own = guard === undefined ? undefined : s.ownRevision;
          return schedulesRepo.update({ tx }, s.id, { deleted: deleted(s) }, this.now(), own);
        },
      });
      return this.view({ tx }, (await schedulesRepo.get({ tx }, accountId, s.productId, s.id))!);
    });
  }

  /** Moves the schedule to the trash; one already there stays there. */
  async remove(
    accountId: number,
    productId: number | null,
    id: number | null,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      await guardedWrite({
        load: () => this.load({ tx }, accountId, productId, id, []),
        ifMatch,
        check: async (s) => {
          if (!s.deleted) await this.assertTrashable({ tx }, s);
        },
        // One already in the trash stays there: nothing to write, nothing lost.
        write: async (s, guard) => {
          if (s.deleted) return 1;
          const own = guard === undefined ? undefined : s.ownRevision;
          return schedulesRepo.update({ tx }, s.id, { deleted: true }, this.now(), own);
        },
      });
    });
  }

  /**
   * The schedule for a guarded write, its exposed revision (its own and its tag's) as
   * `revision`. A copy's is read-only: 403 before If-Match is looked at.
   */
  private async load(
    { tx }: { tx: Tx },
    accountId: number,
    productId: number | null,
    id: number | null,
    fields: string[],
  ) {
    const s = await this.find({ tx }, accountId, productId, id);
    if (s.replica) throw replicaReadonly(fields);
    return { ...s, revision: revisionOf(s) };
  }

  private now(): string {
    return this.clock.now().toISOString();
  }

  private async assertTrashable({ tx }: { tx: Tx }, s: AccessSchedule): Promise<void> {
    if (s.isDefault) throw stateConflict('default_schedule');
    if ((await schedulesRepo.activeDeliveries({ tx }, s.id)) > 0)
      throw stateConflict('schedule_in_use');
  }
}
