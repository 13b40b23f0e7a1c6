// Copies of deliveries in replica accounts (`accounts.replica_of`), as the catalog copies products:
// after every write to a delivery, each account down the chain of replicas holds an up-to-date,
// read-only copy (`source_id`). A copy grants the replica's copies of the source's products
// (under their default schedules: other schedules are not copied) and no tags (tags are not
// replicated); it listens to the same gateway ids, except those the replica account already
// gave to a delivery of its own.
import type { Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { productsRepo, replicaAccountsRepo } from '../catalog/repo.ts';
import { enrollmentsRepo } from '../enrollments/repo.ts';
import {
  deliveriesRepo as repo,
  type Delivery,
  type DeliveryFields,
  type DeliveryProduct,
} from './deliveries-repo.ts';
import { newPostbackToken } from './secrets.ts';

export class DeliveryReplicas {
  private readonly clock: Clock;
  constructor(clock: Clock) {
    this.clock = clock;
  }

  async sync(
    { tx }: { tx: Tx },
    source: Delivery,
    seen = new Set([source.accountId]),
  ): Promise<void> {
    for (const accountId of await replicaAccountsRepo.replicasOf({ tx }, source.accountId)) {
      // Chains are acyclic by construction; never loop anyway.
      if (seen.has(accountId)) continue;
      seen.add(accountId);
      const copy = await this.copy({ tx }, accountId, source);
      await this.sync({ tx }, copy, seen);
    }
  }

  private async copy({ tx }: { tx: Tx }, accountId: number, source: Delivery): Promise<Delivery> {
    const now = this.clock.now().toISOString();
    const fields: DeliveryFields = {
      gateway: source.gateway,
      name: source.name,
      kind: source.kind,
      status: source.status,
      hidden: source.hidden,
      secretHash: source.secretHash,
      duration: source.duration,
      durationUnit: source.durationUnit,
    };
    let copy = await repo.findCopy({ tx }, accountId, source.id);
    const id = copy
      ? (await repo.update({ tx }, copy.id, fields, now), copy.id)
      : await repo.insert(
          { tx },
          { ...fields, accountId, sourceId: source.id, postbackToken: newPostbackToken() },
          now,
        );
    const products: DeliveryProduct[] = [];
    for (const p of source.products) {
      const product = await productsRepo.findCopy({ tx }, accountId, p.productId);
      const schedule = product && (await enrollmentsRepo.schedule({ tx }, product.id, null));
      if (product && schedule)
        products.push({ productId: product.id, accessScheduleId: schedule.id });
    }
    const owners = await repo.owners({ tx }, accountId, source.gateway, source.externalIds);
    const theirs = new Set(owners.filter((o) => o.deliveryId !== id).map((o) => o.externalId));
    const target = { id, accountId, gateway: source.gateway };
    await repo.setExternalIds(
      { tx },
      target,
      source.externalIds.filter((e) => !theirs.has(e)),
    );
    await repo.setProducts({ tx }, id, products);
    copy = (await repo.get({ tx }, accountId, id))!;
    return copy;
  }
}
