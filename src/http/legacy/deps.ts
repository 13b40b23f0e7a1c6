import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/knex.ts';
import type { Logger } from '../../log.ts';
import type { RateLimits } from '../../domain/ratelimit.ts';
import type { Services } from '../../services.ts';

export interface LegacyDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** The same per-minute windows as v3: the specification limits all calls. */
  rateLimits: RateLimits;
}

/** What the generation routers map onto: the same services as v3. */
export interface LegacyRouteDeps {
  services: Pick<
    Services,
    | 'users'
    | 'tags'
    | 'progress'
    | 'outbox'
    | 'deliveries'
    | 'enrollments'
    | 'transactions'
    | 'catalog'
  >;
  /** The base of the URLs the legacy bodies carry (paginator, login_auto). */
  publicBaseUrl: string;
}
