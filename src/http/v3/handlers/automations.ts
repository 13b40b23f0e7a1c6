// Diamond automations: the automation, its memberships (forward-only stage moves) and each
// membership's processing attempts (the sending of a stage's communication).
import type { components } from '../../../../generated/types.ts';
import type { Diamond, Membership } from '../../../domain/automations/repo.ts';
import type { AutomationsService, ProcessingAttempt } from '../../../domain/automations/service.ts';
import { fromId, toId } from '../../../domain/shared/ids.ts';
import { etag } from '../../../domain/shared/revision.ts';
import type { Handlers } from './types.ts';

type S = components['schemas'];

export type AutomationOps =
  | 'createDiamond'
  | 'getDiamond'
  | 'createDiamondMembership'
  | 'getDiamondMembership'
  | 'updateDiamondMembership'
  | 'listDiamondMembershipProcessingAttempts'
  | 'createDiamondMembershipProcessingAttempt';

const presentDiamond = (d: Diamond): S['Diamond'] => ({
  object: 'diamond',
  id: toId(d.id)!,
  name: d.name,
  stages: d.stages.map((s, i) => ({ ...s, position: i + 1 })),
  revision: d.revision,
  created_at: d.createdAt,
  updated_at: d.updatedAt,
});

const presentMembership = (m: Membership): S['DiamondMembership'] => ({
  object: 'diamond_membership',
  id: toId(m.id)!,
  diamond_id: toId(m.diamondId)!,
  user_id: toId(m.userId)!,
  stage: m.stage,
  stage_position: m.stagePosition,
  revision: m.revision,
  created_at: m.createdAt,
  updated_at: m.updatedAt,
});

const presentAttempt = (a: ProcessingAttempt): S['MembershipProcessingAttempt'] => ({
  object: 'processing_attempt',
  id: toId(a.id)!,
  event_id: toId(a.eventId),
  import_id: null,
  membership_id: toId(a.membershipId)!,
  operation_id: null,
  status: a.status,
  effects: { communication_sent: a.communicationSent, stage_confirmed: a.stageConfirmed },
  error: a.error,
  requested_by: { id: toId(a.requestedBy.id), kind: a.requestedBy.kind as 'credential' },
  selection: { mode: a.selection.mode as 'initial' | 'failed', rows: a.selection.rows },
  created_at: a.createdAt,
});

const diamond = (d: Diamond) => ({
  body: { data: presentDiamond(d) },
  headers: { ETag: etag(d.revision) },
});
const membership = (m: Membership) => ({
  body: { data: presentMembership(m) },
  headers: { ETag: etag(m.revision) },
});

export function automationHandlers(s: AutomationsService): Pick<Handlers, AutomationOps> {
  return {
    async createDiamond({ auth, body, tx }) {
      return { status: 201, ...diamond(await s.createDiamond(auth.account.id, body, { tx })) };
    },
    async getDiamond({ auth, params }) {
      return {
        status: 200,
        ...diamond(await s.getDiamond(auth.account.id, fromId(params.diamond_id))),
      };
    },
    async createDiamondMembership({ auth, params, body, tx }) {
      const m = await s.join(auth, fromId(params.diamond_id), fromId(body.user_id), { tx });
      return { status: 201, ...membership(m) };
    },
    async getDiamondMembership({ auth, params }) {
      const ids = [fromId(params.diamond_id), fromId(params.membership_id)] as const;
      return { status: 200, ...membership(await s.getMembership(auth.account.id, ...ids)) };
    },
    async updateDiamondMembership({ auth, params, body, ifMatch, tx }) {
      const ids = [fromId(params.diamond_id), fromId(params.membership_id)] as const;
      return { status: 200, ...membership(await s.move(auth, ...ids, body, ifMatch, { tx })) };
    },
    async listDiamondMembershipProcessingAttempts({ auth, params }) {
      const ids = [fromId(params.diamond_id), fromId(params.membership_id)] as const;
      const list = await s.attempts(auth.account.id, ...ids);
      return { status: 200, body: { data: list.map(presentAttempt) } };
    },
    async createDiamondMembershipProcessingAttempt({ auth, params, tx }) {
      const ids = [fromId(params.diamond_id), fromId(params.membership_id)] as const;
      return { status: 201, body: { data: presentAttempt(await s.retry(auth, ...ids, { tx })) } };
    },
  };
}
