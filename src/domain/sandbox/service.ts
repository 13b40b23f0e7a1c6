// Sandbox resets and scenarios: asynchronous operations on a sandbox account. A reset empties its
// data, so a test suite starts from nothing (production accounts: 403 sandbox_only). A scenario
// resets, then loads a named, reproducible data set (production accounts: 409 sandbox_required).
import type { Tx } from '../../db/engine.ts';
import type { InTx } from '../../db/tx.ts';
import { AppError } from '../../errors.ts';
import type { AuthContext } from '../credentials/auth.ts';
import type { Operation } from '../operations/repo.ts';
import type { OperationsService } from '../operations/service.ts';
import { everyEvent } from './every-event.ts';
import { sandboxRepo } from './repo.ts';
import { emptySchool, school1000 } from './school.ts';
import type { Scenario, ScenarioPayload, ScenarioTools } from './tools.ts';

/** The other areas' part of a reset; returns counts of what it deleted, for the item's result. */
export type CatalogReset = (tx: Tx, accountId: number) => Promise<Record<string, number> | void>;

/** A Map, not an object: a name such as `__proto__` or `toString` finds nothing. */
export const SCENARIOS: ReadonlyMap<string, Scenario> = new Map([
  ['empty_school', emptySchool],
  ['school_1000', school1000],
  ['every_event', everyEvent],
]);

/** The seed of a scenario loaded without one. */
export const DEFAULT_SEED = 1;

export class SandboxService {
  private readonly operations: OperationsService;
  constructor(operations: OperationsService) {
    this.operations = operations;
  }

  /** 202: the reset runs as an operation of type `sandbox.reset` with one item. */
  async reset(auth: AuthContext, opts: InTx = {}): Promise<Operation> {
    if (!auth.account.sandbox) throw new AppError('sandbox_only');
    return this.operations.open(auth, 'sandbox.reset', [{ key: 'reset', payload: {} }], {
      tx: opts.tx,
    });
  }

  /** 202: a `sandbox.scenario` operation: item `reset`, then one item per part of the scenario. */
  async loadScenario(
    auth: AuthContext,
    input: { name: string; seed?: number },
    opts: InTx = {},
  ): Promise<Operation> {
    if (!auth.account.sandbox) throw new AppError('sandbox_required');
    const scenario = SCENARIOS.get(input.name);
    if (!scenario) {
      const message = `Must be one of: ${[...SCENARIOS.keys()].join(', ')}.`;
      throw new AppError('validation_failed', {
        details: [{ field: 'name', code: 'invalid_value', message }],
      });
    }
    const base = { scenario: input.name, seed: input.seed ?? DEFAULT_SEED };
    const items = ['reset', ...scenario.parts()].map((part) => ({
      key: part,
      payload: { ...base, part, credential_id: auth.credential.id } satisfies ScenarioPayload,
    }));
    return this.operations.open(auth, 'sandbox.scenario', items, { tx: opts.tx });
  }
}

type Reset = (tx: Tx, accountId: number, operationId: number) => Promise<Record<string, number>>;

/** The item of a `sandbox.reset` operation: the catalog first (its schedules own tags), then the rest. */
export function resetSandbox(resetCatalog: CatalogReset | undefined): Reset {
  return async (tx: Tx, accountId: number, operationId: number) => {
    const others = resetCatalog ? await resetCatalog(tx, accountId) : undefined;
    return { ...(await sandboxRepo.empty({ tx }, accountId, operationId)), ...others };
  };
}

/** An item of a `sandbox.scenario` operation: the reset, or one part of the scenario. */
export function loadScenarioPart(tools: ScenarioTools, reset: Reset) {
  return async (tx: Tx, accountId: number, payload: ScenarioPayload, operationId: number) => {
    if (payload.part === 'reset') return reset(tx, accountId, operationId);
    const scenario = SCENARIOS.get(payload.scenario);
    if (!scenario) throw new AppError('domain_rule_violation');
    return scenario.load(tools, tx, accountId, payload);
  };
}
