// Sandbox resets: an asynchronous operation that empties a sandbox account's data, so a test
// suite starts from nothing. Production accounts refuse it (403 sandbox_only).
import type { Tx } from '../../db/engine.ts';
import { AppError } from '../../errors.ts';
import type { AuthContext } from '../credentials/auth.ts';
import type { Operation } from '../operations/repo.ts';
import type { OperationsService } from '../operations/service.ts';
import { sandboxRepo } from './repo.ts';

export type CatalogReset = (tx: Tx, accountId: number) => Promise<void>;

export class SandboxService {
  constructor(private readonly operations: OperationsService) {}

  /** 202: the reset runs as an operation of type `sandbox.reset` with one item. */
  async reset(auth: AuthContext, opts: { tx?: Tx } = {}): Promise<Operation> {
    if (!auth.account.sandbox) throw new AppError('sandbox_only');
    return this.operations.open(auth, 'sandbox.reset', [{ key: 'reset', payload: {} }], opts.tx);
  }
}

/** The item of a `sandbox.reset` operation: the catalog first (its schedules own tags), then the rest. */
export function resetSandbox(resetCatalog: CatalogReset | undefined) {
  return async (tx: Tx, accountId: number, operationId: number) => {
    if (resetCatalog) await resetCatalog(tx, accountId);
    return sandboxRepo.empty(tx, accountId, operationId);
  };
}
