// The one composition root of the domain: every entry point (the HTTP app, the worker, the admin
// CLI) builds its services here, over one database, clock and configuration. No import-time
// singletons, so tests can build several in one process.
import type { Config } from './config.ts';
import type { Clock } from './clock.ts';
import type { Db } from './db/knex.ts';
import { CursorCodec } from './db/cursor.ts';
import { serverKey } from './db/server-keys.ts';
import { loadSecretsKey } from './secrets-key.ts';
import { AuditService } from './domain/audit/repo.ts';
import { AccountsService } from './domain/accounts/service.ts';
import { CredentialsService } from './domain/credentials/service.ts';
import { IdempotencyService } from './domain/idempotency/service.ts';
import { RateLimits } from './domain/ratelimit.ts';
import { UsersService } from './domain/users/service.ts';
import { TagsService } from './domain/tags/service.ts';
import { rotateSigningKey } from './oauth/keys.ts';

export interface ServiceDeps {
  config: Config;
  db: Db;
  clock: Clock;
  /** Loaded by the caller when it has one already (it may read or create the key file). */
  secretsKey?: Buffer;
}

export async function createServices({ config, db, clock, ...deps }: ServiceDeps) {
  const secretsKey = deps.secretsKey ?? loadSecretsKey(config);
  const cursors = new CursorCodec(await serverKey(db, 'cursor', clock.now().toISOString()), clock);
  return {
    db,
    clock,
    secretsKey,
    cursors,
    accounts: new AccountsService(db, clock, secretsKey),
    credentials: new CredentialsService(db, clock),
    idempotency: new IdempotencyService(db, clock),
    rateLimits: new RateLimits(db, config.rateLimit),
    audit: new AuditService(db),
    users: new UsersService(db, clock, cursors),
    tags: new TagsService(db, clock, cursors),
    /**
     * A new OAuth signing key: access tokens already issued keep verifying until they expire;
     * running servers pick the new key up within a minute.
     */
    rotateSigningKey: () => rotateSigningKey({ db, clock, secretsKey }),
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
