// Entry points that no credential authenticates (gateway postbacks, signed file URLs) still act
// for an account: a blocked or removed one is refused there as on /api/v3 and the legacy routes
// (403 instance_blocked; instance_unavailable for one that is not active otherwise), so blocking an account stops its grants and its file transfers too.
import type { Tx } from '../../db/knex.ts';
import { AppError } from '../../errors.ts';
import { accountsRepo } from './repo.ts';

export async function assertAccountActive({ tx }: { tx: Tx }, accountId: number): Promise<void> {
  assertActiveStatus(await accountsRepo.status({ tx }, accountId));
}

/** The one mapping of an account's status to its refusal (v3, legacy and the entry points above). */
export function assertActiveStatus(status: string | null): void {
  if (status === null || status === 'blocked' || status === 'removed')
    throw new AppError('instance_blocked');
  if (status !== 'active') throw new AppError('instance_unavailable');
}
