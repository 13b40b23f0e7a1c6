// What a scenario loads its data through: the domain services themselves, so every record obeys
// the rules of an API call and records its events (and webhooks receive them) as usual.
import type { Tx } from '../../db/engine.ts';
import type { AutomationsService } from '../automations/service.ts';
import type { CatalogService } from '../catalog/service.ts';
import type { EnrollmentsService } from '../enrollments/service.ts';
import type { DeliveriesService } from '../sales/deliveries.ts';
import type { PostbacksService } from '../sales/postbacks.ts';
import type { TagsService } from '../tags/service.ts';
import type { UsersService } from '../users/service.ts';

export interface ScenarioTools {
  users: UsersService;
  tags: TagsService;
  catalog: CatalogService;
  enrollments: EnrollmentsService;
  deliveries: DeliveriesService;
  postbacks: PostbacksService;
  automations: AutomationsService;
}

/** One item of a `sandbox.scenario` operation. */
export interface ScenarioPayload {
  scenario: string;
  seed: number;
  /** `reset`, or the part of the scenario this item loads. */
  part: string;
  /** The credential that asked for the load (automations record who requested a send). */
  credential_id: number;
}

export interface Scenario {
  /** The parts to load after the reset, in order; each becomes one item of the operation. */
  parts(): string[];
  load(
    t: ScenarioTools,
    tx: Tx,
    accountId: number,
    p: ScenarioPayload,
  ): Promise<Record<string, unknown>>;
}
