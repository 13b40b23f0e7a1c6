// The catalog's records as the domain sees them. `sourceId` is set on a copy in a replica account:
// the record (in the account it replicates) that it copies.

export type PublicationStatus = 'published' | 'draft';
export type ModuleKind = 'group' | 'module';

export interface Product {
  id: number;
  accountId: number;
  sourceId: number | null;
  name: string;
  description: string | null;
  status: PublicationStatus;
  /** Groups and modules outside the trash (derived). */
  modulesCount: number;
  revision: string;
  createdAt: string;
  updatedAt: string;
}

export interface Module {
  id: number;
  accountId: number;
  productId: number;
  parentId: number | null;
  sourceId: number | null;
  kind: ModuleKind;
  status: PublicationStatus;
  name: string;
  position: number;
  deleted: boolean;
  /** The group whose deletion moved this module to the trash, if any. */
  trashedWith: number | null;
  settings: Record<string, unknown> | null;
  image: string | null;
  revision: string;
  createdAt: string;
  updatedAt: string;
}

export interface AccessSchedule {
  id: number;
  accountId: number;
  productId: number;
  tagId: number;
  /** The name of its tag. */
  name: string;
  isDefault: boolean;
  deleted: boolean;
  /** The schedule's own revision; the exposed one also carries its tag's (see `revisionOf`). */
  ownRevision: string;
  tagRevision: string;
  /** True when its product is a copy (the schedule is then read-only). */
  replica: boolean;
  createdAt: string;
  updatedAt: string;
}

/** A schedule shows its tag's name, so renaming the tag (via /tags too) must change its ETag. */
export const revisionOf = (s: AccessSchedule): string => `${s.ownRevision}.${s.tagRevision}`;
