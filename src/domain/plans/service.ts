// Plans: POST /plans computes one (nothing changes), POST /plans/{id}/applications applies it as an
// operation of type `plan.apply`, GET /manifest shows the configuration as a manifest.
import type { Clock } from '../../clock.ts';
import { DAY, HOUR } from '../../clock.ts';
import type { Db } from '../../db/knex.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { inTransaction, type InTx } from '../../db/tx.ts';
import { AppError } from '../../errors.ts';
import { hasPermission, type AuthContext } from '../credentials/auth.ts';
import type { OperationsService } from '../operations/service.ts';
import type { Operation } from '../operations/repo.ts';
import { PLAN_APPLY } from './apply.ts';
import { computePlan } from './planner.ts';
import { plansRepo as repo } from './repo.ts';
import { loadState } from './state.ts';
import { staleness } from './stale.ts';
import { manifestOf } from './manifest.ts';
import type { Change, Manifest, ManifestSchemas, Plan, PlanStatus, ServiceRules } from './types.ts';

export const PLAN_TTL_MS = HOUR;
/** Plans are kept 30 days, as long as the operations that apply them. */
export const PLAN_RETENTION_MS = 30 * DAY;

export class PlansService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  private readonly operations: OperationsService;
  private readonly rules: ServiceRules;
  constructor(
    db: Db,
    clock: Clock,
    cursors: CursorCodec,
    operations: OperationsService,
    rules: ServiceRules = {},
  ) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.operations = operations;
    this.rules = rules;
  }

  /** ready, expired (by the clock), or as its operation stands. */
  status(p: Plan): PlanStatus {
    if (p.operationId === null)
      return p.expiresAt <= this.clock.now().toISOString() ? 'expired' : 'ready';
    if (p.operationStatus === 'succeeded') return 'applied';
    if (['failed', 'partially_succeeded', 'canceled'].includes(p.operationStatus ?? ''))
      return 'failed';
    return 'applying';
  }

  async get(accountId: number, id: number | null, { tx = this.db }: InTx = {}): Promise<Plan> {
    const p = id === null ? null : await repo.get({ tx }, accountId, id);
    if (!p) throw new AppError('not_found');
    return p;
  }

  list(accountId: number, q: { limit?: number; cursor?: string }) {
    return repo.page({ tx: this.db }, this.cursors, accountId, q);
  }

  async create(
    auth: AuthContext,
    manifest: Manifest,
    schemas: ManifestSchemas,
    opts: InTx = {},
  ): Promise<Plan> {
    const accountId = auth.account.id;
    return inTransaction(this.db, opts.tx, async (tx) => {
      const changes = computePlan(
        manifest,
        await loadState({ tx }, accountId),
        schemas,
        this.rules,
      );
      assertPermissions(auth, schemas, changes);
      const now = this.clock.now();
      const id = await repo.insert(
        { tx },
        {
          accountId,
          credentialId: auth.credential.id,
          prune: manifest.prune === true,
          changes,
          createdAt: now.toISOString(),
          expiresAt: new Date(now.getTime() + PLAN_TTL_MS).toISOString(),
        },
      );
      return (await repo.get({ tx }, accountId, id))!;
    });
  }

  /**
   * Opens the operation that applies the plan. Checked first, in order: applied already (409
   * state_conflict), expired (409 plan_expired), permissions, then every resource it touches
   * still as planned (409 plan_stale): nothing is applied otherwise.
   */
  async apply(
    auth: AuthContext,
    id: number | null,
    schemas: ManifestSchemas,
    opts: InTx = {},
  ): Promise<Operation> {
    const accountId = auth.account.id;
    return inTransaction(this.db, opts.tx, async (tx) => {
      const plan = await this.get(accountId, id, { tx });
      if (plan.operationId !== null)
        throw new AppError('state_conflict', {
          details: [
            { code: 'already_applied', reason: 'already_applied', message: 'A plan applies once.' },
          ],
        });
      if (this.status(plan) === 'expired') throw new AppError('plan_expired');
      assertPermissions(auth, schemas, plan.changes);
      const stale = staleness(plan, await loadState({ tx }, accountId));
      if (stale.length) throw new AppError('plan_stale', { details: stale.slice(0, 100) });
      // Adopted resources that need no change get their key now; the others when applied.
      for (const c of plan.changes)
        if (c.action === 'unchanged') await repo.bind({ tx }, accountId, c.type, c.key, c.id!);
      const items = plan.changes.flatMap((c, i) =>
        c.action === 'unchanged'
          ? []
          : [{ key: `${c.type}.${c.key}`, payload: { plan_id: plan.id, change: i } }],
      );
      const op = await this.operations.open(auth, PLAN_APPLY, items, { tx });
      if ((await repo.setOperation({ tx }, plan.id, op.id)) === 0)
        throw new AppError('state_conflict', {
          details: [
            { code: 'already_applied', reason: 'already_applied', message: 'A plan applies once.' },
          ],
        });
      return op;
    });
  }

  /**
   * The retention sweep: plans created 30 days ago or more are deleted, but not one whose
   * application is still pending or running (its items read the plan). Returns how many.
   */
  async purgeExpired(): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - PLAN_RETENTION_MS).toISOString();
    return inTransaction(this.db, undefined, (tx) => repo.purgeBefore({ tx }, cutoff));
  }

  async manifest(accountId: number): Promise<Manifest> {
    return manifestOf(await loadState({ tx: this.db }, accountId));
  }
}

/** The permissions of the route each change goes through (an unchanged one, its create's). */
function assertPermissions(auth: AuthContext, schemas: ManifestSchemas, changes: Change[]) {
  const missing = changes
    .flatMap((c) => schemas.permissions(c.type, c.action))
    .filter((p, i, all) => all.indexOf(p) === i && !hasPermission(auth.credential.permissions, p));
  if (missing.length)
    throw new AppError('permission_denied', {
      details: missing.map((p) => ({ code: 'missing_permission', message: p, reason: p })),
    });
}
