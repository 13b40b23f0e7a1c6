import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/knex.ts';
import type { Logger } from '../../log.ts';
import type { RateLimits } from '../../domain/ratelimit.ts';

export interface LegacyDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** The same per-minute windows as v3: the specification limits all calls. */
  rateLimits: RateLimits;
}
