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
import { CatalogService } from './domain/catalog/service.ts';
import { OperationsService } from './domain/operations/service.ts';
import { OperationRunner } from './domain/operations/runner.ts';
import { batchTypes } from './domain/operations/batch-types.ts';
import { createJobEngine } from './jobs/index.ts';
import { SandboxService, resetSandbox } from './domain/sandbox/service.ts';
import { PublicationsService } from './domain/catalog/publications.ts';
import type { Logger } from './log.ts';
import { rotateSigningKey } from './oauth/keys.ts';

export interface ServiceDeps {
  config: Config;
  db: Db;
  clock: Clock;
  logger: Logger;
  /** Loaded by the caller when it has one already (it may read or create the key file). */
  secretsKey?: Buffer;
}

export async function createServices({ config, db, clock, logger, ...deps }: ServiceDeps) {
  const secretsKey = deps.secretsKey ?? loadSecretsKey(config);
  const cursors = new CursorCodec(await serverKey(db, 'cursor', clock.now().toISOString()), clock);
  const jobs = await createJobEngine(db, clock, logger);
  const users = new UsersService(db, clock, cursors);
  const tags = new TagsService(db, clock, cursors);
  const catalog = new CatalogService(db, clock, cursors);
  const types = batchTypes({
    users,
    tags,
    publishProduct: (tx, accountId, productId) => catalog.publishProduct(tx, accountId, productId),
    resetSandbox: resetSandbox((tx, accountId) => catalog.resetAccount(tx, accountId)),
  });
  const operations = new OperationsService(db, clock, jobs, cursors, types);
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
    catalog,
    users,
    tags,
    jobs,
    operations,
    sandbox: new SandboxService(operations),
    publications: new PublicationsService(catalog, operations),
    operationRunner: new OperationRunner(db, clock, types),
    /**
     * A new OAuth signing key: access tokens already issued keep verifying until they expire;
     * running servers pick the new key up within a minute.
     */
    rotateSigningKey: () => rotateSigningKey({ db, clock, secretsKey }),
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
