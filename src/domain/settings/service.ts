// User-profile settings (GET, PATCH /settings/user-profile). Replica accounts follow their source's
// settings, read-only, while the source propagates them (`propagation.replicas`, the default), as
// replicated products are read-only copies; a replica whose source does not propagate has settings
// of its own. The order of checks is the catalog's: 403 replica_readonly, then 412.
import type { Clock } from '../../clock.ts';
import type { Db, Tx } from '../../db/knex.ts';
import { inTransaction, type InTx } from '../../db/tx.ts';
import { AppError } from '../../errors.ts';
import { guardedWrite } from '../shared/revision.ts';
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

/** 403 replica_readonly, naming the fields the PATCH tried to change. */
const readonly = (patch: SettingsPatch) =>
  new AppError('replica_readonly', {
    details: namedFields(patch).map((field) => ({
      field,
      code: 'replica_readonly',
      message: 'Set by the source account of this replica.',
    })),
  });

/** Replica chains are acyclic by construction (a replica names an older account); stop anyway. */
const MAX_CHAIN = 16;

export class SettingsService {
  private readonly db: Db;
  private readonly clock: Clock;
  constructor(db: Db, clock: Clock) {
    this.db = db;
    this.clock = clock;
  }

  async get(accountId: number, { tx = this.db }: InTx = {}): Promise<ProfileSettings> {
    return this.resolve({ tx }, accountId, await repo.get({ tx }, accountId), 0);
  }

  async update(
    accountId: number,
    patch: SettingsPatch,
    ifMatch: string | undefined,
    { tx: outer }: InTx = {},
  ): Promise<ProfileSettings> {
    return inTransaction(this.db, outer, async (tx) => {
      const now = this.clock.now().toISOString();
      let after: ProfileSettings | null = null;
      await guardedWrite({
        load: async () => {
          const own = await repo.lock({ tx }, accountId, now);
          const current = await this.resolve({ tx }, accountId, own, 0);
          if (current.inherited) throw readonly(patch);
          return { ...current, own };
        },
        ifMatch,
        write: async ({ own, ...current }, guard) => {
          const overrides = applyPatch(own.overrides, patch);
          // Nothing changes: no new revision (a repeated PATCH keeps the client's ETag valid).
          if (sameOverrides(overrides, own.overrides)) {
            after = current;
            return 1;
          }
          const revision = await repo.update({ tx }, accountId, { overrides, now }, guard);
          if (revision) after = { ...current, revision, values: effective(overrides) };
          return revision ? 1 : 0;
        },
      });
      return after!;
    });
  }

  private async resolve(
    { tx }: { tx: Tx },
    accountId: number,
    own: SettingsRow | null,
    depth: number,
  ): Promise<ProfileSettings> {
    const sourceAccountId = await repo.replicaOf({ tx }, accountId);
    if (sourceAccountId !== null && depth < MAX_CHAIN) {
      const source = await this.resolve(
        { tx },
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
