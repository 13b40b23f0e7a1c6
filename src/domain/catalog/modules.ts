// Groups and modules of a product. Hierarchy: groups only at the top level; a module at the top
// level or inside a group of the same product outside the trash (422 hierarchy_violation).
// Positions count from 1 within one parent; new, moved and restored modules go to the end.
// Deleting moves to the trash (a group takes its modules with it and brings them back when
// restored). Copies in replica accounts accept only status (403 replica_readonly).
import { inTransaction } from '../../db/tx.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import type { PageResult } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { AppError } from '../../errors.ts';
import { fromId } from '../shared/ids.ts';
import { guardedWrite } from '../shared/revision.ts';
import { productsRepo } from './repo.ts';
import { modulesRepo, type ModuleFields } from './modules-repo.ts';
import type { ReplicaSync } from './replicas.ts';
import { hierarchyViolation, orderSetMismatch, replicaReadonly, stateConflict } from './errors.ts';
import type { Module, ModuleKind, Product, PublicationStatus } from './types.ts';

export interface ModuleInput {
  name?: string;
  kind?: ModuleKind;
  parent_id?: string | null;
  status?: PublicationStatus;
  settings?: Record<string, unknown> | null;
  image?: string | null;
  deleted?: boolean;
}

export interface ModuleListQuery {
  sort?: 'position' | '-position';
  parent_id?: string;
  status?: PublicationStatus;
  kind?: ModuleKind;
  deleted?: boolean;
  limit?: number;
  cursor?: string;
}

export class ModulesService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  private readonly replicas: ReplicaSync;
  constructor(db: Db, clock: Clock, cursors: CursorCodec, replicas: ReplicaSync) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.replicas = replicas;
  }

  private now = () => this.clock.now().toISOString();

  private async product(
    { tx }: { tx: Tx },
    accountId: number,
    productId: number | null,
  ): Promise<Product> {
    const p = productId === null ? null : await productsRepo.get({ tx }, accountId, productId);
    if (!p) throw new AppError('not_found');
    return p;
  }

  private async find(
    { tx }: { tx: Tx },
    accountId: number,
    productId: number | null,
    id: number | null,
  ) {
    const p = await this.product({ tx }, accountId, productId);
    const m = id === null ? null : await modulesRepo.get({ tx }, accountId, p.id, id);
    if (!m) throw new AppError('not_found');
    return m;
  }

  /** The parent a module of `kind` may have: null (top level) or an active group of `p`. */
  private async parentFor({ tx }: { tx: Tx }, p: Product, kind: ModuleKind, raw: string | null) {
    if (raw === null) return null;
    if (kind === 'group') throw hierarchyViolation('group_not_top_level');
    const id = fromId(raw);
    const parent = id === null ? null : await modulesRepo.get({ tx }, p.accountId, p.id, id);
    if (!parent) throw hierarchyViolation('parent_not_found');
    if (parent.kind !== 'group') throw hierarchyViolation('parent_not_group');
    if (parent.deleted) throw hierarchyViolation('parent_in_trash');
    return parent.id;
  }

  async list(
    accountId: number,
    productId: number | null,
    q: ModuleListQuery,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<PageResult<Module>> {
    const p = await this.product({ tx }, accountId, productId);
    const filters = {
      // Not an id a record can have -> a filter that matches nothing (0), not an error.
      parentId:
        q.parent_id === undefined
          ? undefined
          : q.parent_id === 'null'
            ? null
            : (fromId(q.parent_id) ?? 0),
      status: q.status,
      kind: q.kind,
      deleted: q.deleted ?? false,
    };
    return modulesRepo.page({ tx }, this.cursors, accountId, p.id, filters, q);
  }

  async get(
    accountId: number,
    productId: number | null,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ) {
    return this.find({ tx }, accountId, productId, id);
  }

  async create(
    accountId: number,
    productId: number | null,
    input: ModuleInput & { name: string; kind: ModuleKind },
    opts: { tx?: Tx } = {},
  ): Promise<Module> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const p = await this.product({ tx }, accountId, productId);
      if (p.sourceId !== null) throw replicaReadonly();
      await productsRepo.lock({ tx }, p.id);
      const parentId = await this.parentFor({ tx }, p, input.kind, input.parent_id ?? null);
      const id = await modulesRepo.insert(
        { tx },
        {
          accountId,
          productId: p.id,
          parentId,
          kind: input.kind,
          status: input.status ?? 'draft',
          name: input.name.trim(),
          position: await modulesRepo.nextPosition({ tx }, p.id, parentId),
          deleted: false,
          trashedWith: null,
          settings: input.settings ?? null,
          image: input.image ?? null,
        },
        this.now(),
      );
      const m = (await modulesRepo.get({ tx }, accountId, p.id, id))!;
      await this.replicas.module({ tx }, m, true);
      return m;
    });
  }

  async update(
    accountId: number,
    productId: number | null,
    id: number | null,
    input: ModuleInput,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<Module> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const restoring = (m: Module) => m.deleted && input.deleted === false;
      const m = await guardedWrite({
        load: async () => {
          const m = await this.find({ tx }, accountId, productId, id);
          const readonly = Object.keys(input).filter((k) => k !== 'status');
          if (m.sourceId !== null && readonly.length) throw replicaReadonly(readonly);
          return m;
        },
        ifMatch,
        check: (m) => {
          const others = Object.keys(input).filter((k) => k !== 'deleted');
          if (m.deleted && !restoring(m) && others.length) throw stateConflict('in_trash');
        },
        write: async (m, guard) =>
          modulesRepo.update({ tx }, m.id, await this.changes({ tx }, m, input), this.now(), guard),
      });
      let updated = (await modulesRepo.get({ tx }, accountId, m.productId, m.id))!;
      if (restoring(m) && m.kind === 'group') {
        for (const child of await modulesRepo.children({ tx }, m.id, 'trashed_with_it'))
          await this.write({ tx }, child, { deleted: false, trashedWith: null });
      }
      if (input.deleted === true && !m.deleted) {
        if ((await this.trash({ tx }, updated)) === 0) throw new AppError('not_found');
        updated = (await modulesRepo.get({ tx }, accountId, m.productId, m.id))!;
      }
      await this.replicas.module({ tx }, updated, input.status !== undefined);
      return updated;
    });
  }

  /** Moves the module to the trash; one already there stays there. */
  async remove(
    accountId: number,
    productId: number | null,
    id: number | null,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      await guardedWrite({
        load: async () => {
          const m = await this.find({ tx }, accountId, productId, id);
          if (m.sourceId !== null) throw replicaReadonly();
          return m;
        },
        ifMatch,
        // One already in the trash stays there: nothing to write, nothing lost.
        write: async (m, guard) => (m.deleted ? 1 : this.trash({ tx }, m, guard)),
      });
    });
  }

  /** The fields `input` changes; moved or restored, the module goes to its parent's end. */
  private async changes(
    { tx }: { tx: Tx },
    m: Module,
    input: ModuleInput,
  ): Promise<Partial<ModuleFields>> {
    const restoring = m.deleted && input.deleted === false;
    const changes: Partial<ModuleFields> = {};
    if (input.name !== undefined) changes.name = input.name.trim();
    if (input.status !== undefined) changes.status = input.status;
    if (input.settings !== undefined) changes.settings = input.settings;
    if (input.image !== undefined) changes.image = input.image;
    if (input.parent_id !== undefined || restoring) {
      const p = await this.product({ tx }, m.accountId, m.productId);
      await productsRepo.lock({ tx }, p.id);
      const raw = input.parent_id !== undefined ? input.parent_id : toRaw(m.parentId);
      const parentId = await this.parentFor({ tx }, p, m.kind, raw);
      if (parentId !== m.parentId || restoring) {
        changes.parentId = parentId;
        changes.position = await modulesRepo.nextPosition({ tx }, p.id, parentId);
      }
    }
    if (restoring) Object.assign(changes, { deleted: false, trashedWith: null });
    return changes;
  }

  /**
   * A group takes its active modules with it (they remember it, to come back with it). Returns
   * the rows hit: 0 when the module is gone or, with `guard`, at another revision.
   */
  private async trash({ tx }: { tx: Tx }, m: Module, guard?: string): Promise<number> {
    const hit = await modulesRepo.update(
      { tx },
      m.id,
      { deleted: true, trashedWith: null },
      this.now(),
      guard,
    );
    if (hit === 0) return 0;
    if (m.kind === 'group') {
      for (const child of await modulesRepo.children({ tx }, m.id, 'active'))
        await this.write({ tx }, child, { deleted: true, trashedWith: m.id });
    }
    await this.replicas.module(
      { tx },
      (await modulesRepo.get({ tx }, m.accountId, m.productId, m.id))!,
      false,
    );
    return hit;
  }

  /** One parent's active modules, in the order given (exactly those, each once). */
  async reorder(
    accountId: number,
    productId: number | null,
    input: { parent_id?: string | null; module_ids: string[] },
    opts: { tx?: Tx } = {},
  ): Promise<Module[]> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const p = await this.product({ tx }, accountId, productId);
      if (p.sourceId !== null) throw replicaReadonly();
      await productsRepo.lock({ tx }, p.id);
      const parentId = await this.parentFor({ tx }, p, 'module', input.parent_id ?? null);
      const siblings = await modulesRepo.siblings({ tx }, p.id, parentId);
      const byId = new Map(siblings.map((s) => [String(s.id), s]));
      const given = input.module_ids;
      if (
        given.length !== siblings.length ||
        new Set(given).size !== given.length ||
        !given.every((g) => byId.has(g))
      )
        throw orderSetMismatch(
          siblings.map((s) => s.id),
          given,
        );
      for (const [i, key] of given.entries()) {
        const s = byId.get(key)!;
        if (s.position !== i + 1) await this.write({ tx }, s, { position: i + 1 });
      }
      return modulesRepo.siblings({ tx }, p.id, parentId);
    });
  }

  /** Writes one module (new revision) and brings its copies up to date. */
  private async write(
    { tx }: { tx: Tx },
    m: Module,
    changes: Partial<ModuleFields>,
  ): Promise<void> {
    await modulesRepo.update({ tx }, m.id, changes, this.now());
    await this.replicas.module(
      { tx },
      (await modulesRepo.get({ tx }, m.accountId, m.productId, m.id))!,
      false,
    );
  }
}

const toRaw = (id: number | null) => (id === null ? null : String(id));
