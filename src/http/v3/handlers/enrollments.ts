// Enrollment handlers: a student's access to products.
import type { EnrollmentsService } from '../../../domain/enrollments/service.ts';
import { enrollmentResource, type Enrollment } from '../../../domain/enrollments/types.ts';
import { fromId } from '../../../domain/shared/ids.ts';
import { etag } from '../../../domain/shared/revision.ts';
import type { Handlers } from './types.ts';

type EnrollmentOps =
  'createEnrollment' | 'getEnrollment' | 'updateEnrollment' | 'listUserEnrollments';

const one = (e: Enrollment) => ({
  body: { data: enrollmentResource(e) },
  headers: { ETag: etag(e.revision) },
});

export function enrollmentHandlers(enrollments: EnrollmentsService): Pick<Handlers, EnrollmentOps> {
  return {
    async createEnrollment({ auth, body, tx }) {
      return { status: 201, ...one(await enrollments.create(auth.account.id, body, { tx })) };
    },
    async getEnrollment({ auth, params }) {
      const e = await enrollments.get(auth.account.id, fromId(params.enrollment_id));
      return { status: 200, ...one(e) };
    },
    async updateEnrollment({ auth, params, body, ifMatch, tx }) {
      const id = fromId(params.enrollment_id);
      const e = await enrollments.update(auth.account.id, id, body, ifMatch, { tx });
      return { status: 200, ...one(e) };
    },
    async listUserEnrollments({ auth, params, query }) {
      const userId = fromId(params.user_id);
      const { rows, page } = await enrollments.listForUser(auth.account.id, userId, query);
      return { status: 200, body: { data: rows.map(enrollmentResource), page } };
    },
  };
}
