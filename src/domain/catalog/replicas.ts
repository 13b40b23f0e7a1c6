// Copies of products and modules in replica accounts (`accounts.replica_of`). After every write to
// a product or module, each account that replicates its account holds an up-to-date copy (created
// on the first write it sees), and so on down the chain of replicas. A copy records its source
// (`source_id`); it follows the source's content, and takes the source's status when created and
// whenever the source's status is written (publishing publishes copies). Otherwise a replica keeps
// the status it chose. Deleting a source deletes its copies (ON DELETE CASCADE).
import type { Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { productsRepo, replicaAccountsRepo, type ProductFields } from './repo.ts';
import { modulesRepo, type ModuleFields } from './modules-repo.ts';
import type { SchedulesService } from './schedules.ts';
import type { Module, Product } from './types.ts';

export class ReplicaSync {
  private readonly clock: Clock;
  private readonly schedules: SchedulesService;
  constructor(clock: Clock, schedules: SchedulesService) {
    this.clock = clock;
    this.schedules = schedules;
  }

  /** Every account down the chain of replicas of `accountId`, each with the account it copies. */
  private async *replicas({ tx }: { tx: Tx }, accountId: number, seen = new Set([accountId])) {
    for (const id of await replicaAccountsRepo.replicasOf({ tx }, accountId)) {
      // Chains are acyclic by construction (replica_of names an older account); never loop anyway.
      if (seen.has(id)) continue;
      seen.add(id);
      yield id;
    }
  }

  /** Updates (or creates) the copies of a product; `withStatus` pushes its status too. */
  async product(
    { tx }: { tx: Tx },
    source: Product,
    withStatus: boolean,
    seen?: Set<number>,
  ): Promise<void> {
    const chain = seen ?? new Set([source.accountId]);
    for await (const accountId of this.replicas({ tx }, source.accountId, chain)) {
      const copy = await this.productCopy({ tx }, accountId, source, withStatus);
      await this.product({ tx }, copy, withStatus, chain);
    }
  }

  /** Updates (or creates) the copies of a module, and of its product and group if missing. */
  async module(
    { tx }: { tx: Tx },
    source: Module,
    withStatus: boolean,
    seen?: Set<number>,
  ): Promise<void> {
    const chain = seen ?? new Set([source.accountId]);
    for await (const accountId of this.replicas({ tx }, source.accountId, chain)) {
      const copy = await this.moduleCopy({ tx }, accountId, source, withStatus);
      await this.module({ tx }, copy, withStatus, chain);
    }
  }

  private async productCopy(
    { tx }: { tx: Tx },
    accountId: number,
    source: Product,
    withStatus: boolean,
  ): Promise<Product> {
    const now = this.clock.now().toISOString();
    const copy = await productsRepo.findCopy({ tx }, accountId, source.id);
    if (!copy) {
      const id = await productsRepo.insert(
        { tx },
        {
          accountId,
          sourceId: source.id,
          name: source.name,
          description: source.description,
          status: source.status,
        },
        now,
      );
      const created = (await productsRepo.get({ tx }, accountId, id))!;
      await this.schedules.createDefault({ tx }, created);
      return created;
    }
    const changes: Partial<ProductFields> = {};
    if (copy.name !== source.name) changes.name = source.name;
    if (copy.description !== source.description) changes.description = source.description;
    if (withStatus && copy.status !== source.status) changes.status = source.status;
    if (!Object.keys(changes).length) return copy;
    await productsRepo.update({ tx }, copy.id, changes, now);
    return (await productsRepo.get({ tx }, accountId, copy.id))!;
  }

  private async ensureProductCopy(
    { tx }: { tx: Tx },
    accountId: number,
    source: Module,
  ): Promise<Product> {
    const copy = await productsRepo.findCopy({ tx }, accountId, source.productId);
    if (copy) return copy;
    const product = (await productsRepo.get({ tx }, source.accountId, source.productId))!;
    return this.productCopy({ tx }, accountId, product, true);
  }

  private async moduleCopy(
    { tx }: { tx: Tx },
    accountId: number,
    source: Module,
    withStatus: boolean,
  ): Promise<Module> {
    const now = this.clock.now().toISOString();
    const product = await this.ensureProductCopy({ tx }, accountId, source);
    let parentId: number | null = null;
    if (source.parentId !== null) {
      const parent =
        (await modulesRepo.findCopy({ tx }, accountId, source.parentId)) ??
        (await this.moduleCopy(
          { tx },
          accountId,
          (await modulesRepo.get({ tx }, source.accountId, source.productId, source.parentId))!,
          true,
        ));
      parentId = parent.id;
    }
    const content: Omit<ModuleFields, 'status'> = {
      parentId,
      kind: source.kind,
      name: source.name,
      position: source.position,
      deleted: source.deleted,
      // Only a group's deletion trashes a module with it, and the group is the module's parent.
      trashedWith: source.trashedWith === null ? null : parentId,
      settings: source.settings,
      image: source.image,
    };
    const copy = await modulesRepo.findCopy({ tx }, accountId, source.id);
    if (!copy) {
      const id = await modulesRepo.insert(
        { tx },
        {
          accountId,
          productId: product.id,
          sourceId: source.id,
          status: source.status,
          ...content,
        },
        now,
      );
      return (await modulesRepo.get({ tx }, accountId, product.id, id))!;
    }
    const changes: Partial<ModuleFields> = {};
    for (const k of Object.keys(content) as (keyof typeof content)[]) {
      // settings is an object: compared by its JSON text, as stored.
      const same =
        k === 'settings'
          ? JSON.stringify(copy.settings) === JSON.stringify(content.settings)
          : copy[k] === content[k];
      if (!same) Object.assign(changes, { [k]: content[k] });
    }
    if (withStatus && copy.status !== source.status) changes.status = source.status;
    if (!Object.keys(changes).length) return copy;
    await modulesRepo.update({ tx }, copy.id, changes, now);
    return (await modulesRepo.get({ tx }, accountId, copy.productId, copy.id))!;
  }
}
