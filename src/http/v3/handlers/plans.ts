// v3 plans: compute one, read them, apply one (202 with its operation), the manifest.
import type { components } from '../../../../generated/types.ts';
import type { PlansService } from '../../../domain/plans/service.ts';
import type { Manifest, Plan } from '../../../domain/plans/types.ts';
import { fromId, toId } from '../../../domain/shared/ids.ts';
import type { ManifestChecks } from '../manifest-schemas.ts';
import { accepted } from './operations.ts';
import type { Handlers } from './types.ts';

type S = components['schemas'];

export function presentPlan(p: Plan, status: S['Plan']['status']): S['Plan'] {
  const summary = { create: 0, update: 0, delete: 0, unchanged: 0 };
  for (const c of p.changes) summary[c.action]++;
  return {
    object: 'plan',
    id: String(p.id),
    status,
    prune: p.prune,
    summary,
    changes: p.changes.map((c) => ({
      action: c.action,
      type: c.type,
      key: c.key,
      id: toId(c.id),
      revision: c.revision,
      fields: c.fields,
    })),
    operation_id: toId(p.operationId),
    created_at: p.createdAt,
    expires_at: p.expiresAt,
  };
}

export function planHandlers(
  plans: PlansService,
  checks: ManifestChecks,
): Pick<
  Handlers,
  'createPlan' | 'getPlan' | 'listPlans' | 'createPlanApplication' | 'getManifest'
> {
  const present = (p: Plan) => presentPlan(p, plans.status(p));
  return {
    async createPlan({ auth, body, tx, locale }) {
      const p = await plans.create(auth, body as unknown as Manifest, checks(locale), { tx });
      return { status: 201, body: { data: present(p) } };
    },
    async getPlan({ auth, params }) {
      const p = await plans.get(auth.account.id, fromId(params.plan_id));
      return { status: 200, body: { data: present(p) } };
    },
    async listPlans({ auth, query }) {
      const { rows, page } = await plans.list(auth.account.id, query);
      return { status: 200, body: { data: rows.map(present), page } };
    },
    async createPlanApplication({ auth, params, tx, locale }) {
      return accepted(await plans.apply(auth, fromId(params.plan_id), checks(locale), { tx }));
    },
    async getManifest({ auth }) {
      const m = await plans.manifest(auth.account.id);
      return { status: 200, body: { data: m as S['Manifest'] } };
    },
  };
}
