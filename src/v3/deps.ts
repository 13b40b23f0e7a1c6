import type { Config } from '../config.ts';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/knex.ts';
import type { CursorCodec } from '../domain/shared/cursor.ts';

/** What resource handler factories receive from the composition root. */
export interface ResourceDeps {
  db: Db;
  clock: Clock;
  config: Config;
  cursors: CursorCodec;
}
