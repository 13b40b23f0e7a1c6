// Preloaded into worker processes by tests (`node --import ./src/node-version.mjs --import ./test/helpers/slow-plans.ts`):
// each tag a plan's application creates takes SLOW_ITEM_MS longer, so a test can stop the worker
// mid-application whatever the machine's speed. Production code has no such hook.
import { TagsService } from '../../src/domain/tags/service.ts';

const delay = Number(process.env.SLOW_ITEM_MS ?? 0);
const original = TagsService.prototype.create;
TagsService.prototype.create = async function (this: TagsService, ...args) {
  await new Promise((resolve) => setTimeout(resolve, delay));
  return original.apply(this, args);
};
