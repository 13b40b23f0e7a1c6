// Preloaded into worker processes by tests (`node --import ./src/node-version.mjs --import ./test/helpers/slow-items.ts`):
// each users.upsert item takes SLOW_ITEM_MS longer, so a test can stop the worker mid-batch
// whatever the machine's speed. Production code has no such hook.
import { UsersService } from '../../src/domain/users/service.ts';

const delay = Number(process.env.SLOW_ITEM_MS ?? 0);
const original = UsersService.prototype.upsertByEmail;
UsersService.prototype.upsertByEmail = async function (this: UsersService, ...args) {
  await new Promise((resolve) => setTimeout(resolve, delay));
  return original.apply(this, args);
};
// The set-based path (PostgreSQL) applies a chunk at once: as slow as its items one by one.
const originalMany = UsersService.prototype.upsertManyByEmail;
UsersService.prototype.upsertManyByEmail = async function (this: UsersService, ...args) {
  await new Promise((resolve) => setTimeout(resolve, delay * args[1].length));
  return originalMany.apply(this, args);
};
