// User-profile settings (GET, PATCH /settings/user-profile). Replica accounts follow their source's
// settings, read-only, while the source propagates them (`propagation.replicas`, the default), as
// replicated products are read-only copies; a replica whose source does not propagate has settings
// of its own. The order of checks is the catalog's: 403 replica_readonly, then 412.
import type { Clock } from '../../clock.ts';
import type { Db, Tx } from '../../db/knex.ts';
import { inTransaction } from '../../db/tx.ts';
import { AppError } from '../../errors.ts';
import { newRevision } from '../shared/ids.ts';
import { assertRevision } from '../shared/revision.ts';
import { INITIAL_REVISION, settingsRepo as repo, type SettingsRow } from './repo.ts';
import {
  applyPatch,
  effective,
  namedFields,
  sameOverrides,
  type SettingsPatch,
  type SettingsValues,
} from './values.ts';

export interface ProfileSettings {
  accountId: number;
  /** The account this one replicates, or null. */
  sourceAccountId: number | null;
  /** The values are the source's (read-only here). */
  inherited: boolean;
  revision: string;
  values: SettingsValues;
}

/** Replica chains are acyclic by construction (a replica names an older account); stop anyway. */
const MAX_CHAIN = 16;

export class SettingsService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async get(accountId: number, tx: Tx = this.db): Promise<ProfileSettings> {
    return this.resolve(tx, accountId, await repo.get({ tx }, accountId), 0);
  }

  async update(
    accountId: number,
    patch: SettingsPatch,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<ProfileSettings> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const now = this.clock.now().toISOString();
      const own = await repo.lock({ tx }, accountId, now);
      const current = await this.resolve(tx, accountId, own, 0);
      if (current.inherited) {
        throw new AppError('replica_readonly', {
          details: namedFields(patch).map((field) => ({
            field,
            code: 'replica_readonly',
            message: 'Set by the source account of this replica.',
          })),
        });
      }
      assertRevision(ifMatch, current.revision);
      const overrides = applyPatch(own.overrides, patch);
      // Nothing changes: no new revision (a repeated PATCH keeps the client's ETag valid).
      if (sameOverrides(overrides, own.overrides)) return current;
      const revision = newRevision();
      if (
        !(await repo.update({ tx }, accountId, own.revision, {
          overrides,
          revision,
          updatedAt: now,
        }))
      )
        throw new AppError('revision_mismatch');
      return { ...current, revision, values: effective(overrides) };
    });
  }

  private async resolve(
    tx: Tx,
    accountId: number,
    own: SettingsRow | null,
    depth: number,
  ): Promise<ProfileSettings> {
    const sourceAccountId = await repo.replicaOf({ tx }, accountId);
    if (sourceAccountId !== null && depth < MAX_CHAIN) {
      const source = await this.resolve(
        tx,
        sourceAccountId,
        await repo.get({ tx }, sourceAccountId),
        depth + 1,
      );
      if (source.values.propagation.replicas)
        return { ...source, accountId, sourceAccountId, inherited: true };
    }
    return {
      accountId,
      sourceAccountId,
      inherited: false,
      revision: own?.revision ?? INITIAL_REVISION,
      values: effective(own?.overrides ?? {}),
    };
  }
}
