// Preloaded into worker processes by tests (`node --import ./src/node-version.mjs --import ./test/helpers/slow-grants.ts`):
// each grant of access takes SLOW_GRANT_MS longer, so a test can kill the worker in the middle of
// an import's processing attempt whatever the machine's speed. Production code has no such hook.
import { EnrollmentsService } from '../../src/domain/enrollments/service.ts';

const delay = Number(process.env.SLOW_GRANT_MS ?? 0);
const original = EnrollmentsService.prototype.grantAccess;
EnrollmentsService.prototype.grantAccess = async function (this: EnrollmentsService, ...args) {
  await new Promise((resolve) => setTimeout(resolve, delay));
  return original.apply(this, args);
};
// The set-based path (a chunk of an import, an enrollments.grant batch) grants a chunk at once:
// as slow as its grants one by one.
const originalMany = EnrollmentsService.prototype.grantMany;
EnrollmentsService.prototype.grantMany = async function (this: EnrollmentsService, ...args) {
  await new Promise((resolve) => setTimeout(resolve, delay * args[2].length));
  return originalMany.apply(this, args);
};
