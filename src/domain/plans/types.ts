// Plans: a manifest (the school's configuration, declared) compared with the account's resources.
// DECISIONS.md ("Plans") records what the issue left open.
import type { ErrorDetail } from '../../errors.ts';

/** The types a manifest may hold, in the order their creations and updates apply. */
export const PLAN_TYPES = [
  'tag',
  'product',
  'module',
  'access_schedule',
  'delivery',
  'webhook',
  'diamond',
] as const;
export type PlanType = (typeof PLAN_TYPES)[number];

export const isPlanType = (t: unknown): t is PlanType =>
  typeof t === 'string' && (PLAN_TYPES as readonly string[]).includes(t);

export interface Ref {
  ref: string;
}

export const isRef = (v: unknown): v is Ref =>
  !!v &&
  typeof v === 'object' &&
  !Array.isArray(v) &&
  Object.keys(v).length === 1 &&
  typeof (v as Ref).ref === 'string';

export interface ManifestEntry {
  type: string;
  key: string;
  id?: string;
  properties: Record<string, unknown>;
}

export interface Manifest {
  version: number;
  prune?: boolean;
  resources: ManifestEntry[];
}

export type Action = 'create' | 'update' | 'delete' | 'unchanged';

export interface Change {
  action: Action;
  type: PlanType;
  key: string;
  id: number | null;
  revision: string | null;
  fields: Record<string, { from: unknown; to: unknown }>;
  /** What the service is given (create: every property of the entry; update: those that change). */
  input: Record<string, unknown>;
  /** A module's or access schedule's product: its id, or a reference to one the plan creates. */
  product?: number | Ref;
}

export type PlanStatus = 'ready' | 'applying' | 'applied' | 'failed' | 'expired';

export interface Plan {
  id: number;
  accountId: number;
  prune: boolean;
  changes: Change[];
  operationId: number | null;
  /** The status of its operation, when it has one. */
  operationStatus: string | null;
  createdAt: string;
  expiresAt: string;
}

/** The rules a type's service enforces beyond its schema, checked at planning time. */
export type ServiceRules = Partial<
  Record<PlanType, (properties: Record<string, unknown>) => ErrorDetail[]>
>;

/**
 * What the contract says about a manifest, compiled by the HTTP layer from its schemas (the v3
 * create schemas, not a copy): an entry's shape, a type's properties, a type's write permissions.
 */
export interface ManifestSchemas {
  entry(entry: unknown, at: string): ErrorDetail[];
  properties(type: PlanType, properties: unknown, at: string): ErrorDetail[];
  /** The x-permissions of the route that applies `action` to a resource of `type`. */
  permissions(type: PlanType, action?: Action): string[];
}
