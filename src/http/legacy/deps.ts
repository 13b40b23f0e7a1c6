import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/knex.ts';
import type { Logger } from '../../log.ts';

export interface LegacyDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
}
