// The student as events carry it (spec/events/user.*): the profile an integration syncs, without
// the sign-in token (a bearer secret) or the platform's own counters.
import type { User } from './repo.ts';

export const PROFILE_FIELDS = [
  'name',
  'email',
  'phone',
  'document',
  'job_title',
  'company_name',
  'company_size',
  'free',
  'utm',
] as const;

export function userSnapshot(u: User) {
  return {
    id: String(u.id),
    name: u.name,
    email: u.email,
    phone: u.phone,
    document: u.document,
    job_title: u.jobTitle,
    company_name: u.companyName,
    company_size: u.companySize,
    free: u.free,
    utm: u.utm,
    created_at: u.createdAt,
    updated_at: u.updatedAt,
  };
}

/** Profile fields whose value differs between two snapshots, in the catalog's order. */
export function changedFields(
  before: ReturnType<typeof userSnapshot>,
  after: ReturnType<typeof userSnapshot>,
): string[] {
  return PROFILE_FIELDS.filter((f) => JSON.stringify(before[f]) !== JSON.stringify(after[f]));
}
