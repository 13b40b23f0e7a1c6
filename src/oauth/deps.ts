import type { Config } from '../config.ts';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/knex.ts';
import type { Logger } from '../log.ts';
import type { AccountsService } from '../domain/accounts/service.ts';

export interface OAuthDeps {
  db: Db;
  clock: Clock;
  config: Config;
  logger: Logger;
  accounts: AccountsService;
  /** The key from SECRETS_KEY or the key file; loaded from `config` when absent. */
  secretsKey?: Buffer;
}
