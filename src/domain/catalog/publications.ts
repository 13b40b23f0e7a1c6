// POST /products/{id}/publications: checks the product at once (404, 403 replica_readonly), then
// publishes it as an asynchronous operation of type product.publish_all with one item.
import type { Tx } from '../../db/engine.ts';
import type { AuthContext } from '../credentials/auth.ts';
import type { Operation } from '../operations/repo.ts';
import type { OperationsService } from '../operations/service.ts';
import { toId } from '../shared/ids.ts';
import { replicaReadonly } from './errors.ts';
import type { CatalogService } from './service.ts';

export class PublicationsService {
  private readonly catalog: CatalogService;
  private readonly operations: OperationsService;
  constructor(catalog: CatalogService, operations: OperationsService) {
    this.catalog = catalog;
    this.operations = operations;
  }

  async publish(
    auth: AuthContext,
    productId: number | null,
    opts: { tx?: Tx } = {},
  ): Promise<Operation> {
    const p = await this.catalog.get(auth.account.id, productId, { tx: opts.tx });
    if (p.sourceId !== null) throw replicaReadonly();
    const id = toId(p.id)!;
    return this.operations.open(
      auth,
      'product.publish_all',
      [{ key: id, payload: { product_id: id } }],
      { tx: opts.tx },
    );
  }
}
