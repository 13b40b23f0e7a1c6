// The one composition root of the domain: every entry point (the HTTP app, the worker, the admin
// CLI) builds its services here, over one database, clock and configuration. No import-time
// singletons, so tests can build several in one process.
import type { Config } from './config.ts';
import type { Clock } from './clock.ts';
import type { Db } from './db/knex.ts';
import { CursorCodec } from './db/cursor.ts';
import { serverKey } from './db/server-keys.ts';
import { loadSecretsKey } from './secrets-key.ts';
import { verifySecretsKey } from './secrets-fingerprint.ts';
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
import { batchTypes } from './batches/index.ts';
import type { BatchTypes } from './domain/operations/batch-types.ts';
import { createJobEngine } from './jobs/index.ts';
import { SandboxService, loadScenarioPart, resetSandbox } from './domain/sandbox/service.ts';
import { PublicationsService } from './domain/catalog/publications.ts';
import { createSalesServices } from './domain/sales/services.ts';
import type { Logger } from './log.ts';
import { EventCatalog } from './domain/events/catalog.ts';
import { EventsService } from './domain/events/service.ts';
import { WebhookDispatcher } from './domain/webhooks/dispatcher.ts';
import { WebhookDeliveries } from './domain/webhooks/deliveries.ts';
import { WebhookFanOut } from './domain/webhooks/fanout.ts';
import { WebhookSender } from './domain/webhooks/sender.ts';
import { WebhooksService } from './domain/webhooks/service.ts';
import { Metrics } from './metrics.ts';
import { AutomationsService } from './domain/automations/service.ts';
import { StreamsService } from './domain/streams/service.ts';
import { FilesService } from './domain/files/service.ts';
import { createStorage } from './domain/files/storage/index.ts';
import { UploadsService } from './domain/files/uploads.ts';
import { SettingsService } from './domain/settings/service.ts';
import { ImportsService } from './domain/imports/service.ts';
import { ExportsService } from './domain/exports/service.ts';
import { PlansService } from './domain/plans/service.ts';

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
  // Before anything is sealed with it: a process with another instance's key must not start.
  await verifySecretsKey(db, secretsKey, clock.now().toISOString());
  const cursors = new CursorCodec(await serverKey(db, 'cursor', clock.now().toISOString()), clock);
  const jobs = await createJobEngine(db, clock, logger);
  const storageKey = await serverKey(db, 'storage', clock.now().toISOString());
  const storage = await createStorage(config, storageKey);
  const files = new FilesService(db, clock, storage);
  const uploads = new UploadsService(db, clock, storage);
  // Per set of services, never a global registry (tests run several apps in one process).
  const metrics = new Metrics();
  metrics.watchStorage(db, clock);
  // Events first: the domain services record them in their transactions (and webhooks fan out).
  const eventCatalog = new EventCatalog();
  const events = new EventsService(db, clock, cursors, eventCatalog, logger);
  const webhookSender = new WebhookSender(clock, config.webhookAllowPrivateTargets);
  const webhookDispatcher = new WebhookDispatcher(
    db,
    clock,
    jobs,
    webhookSender,
    secretsKey,
    logger,
    config.webhookPerEndpoint,
  );
  const webhookFanOut = new WebhookFanOut(clock, jobs, eventCatalog, (id) =>
    webhookDispatcher.claimSoon(id),
  );
  events.onRecord(
    (tx, event, rows) => webhookFanOut.fanOut({ tx }, event, rows),
    (tx, list, rows) => webhookFanOut.fanOutMany({ tx }, list, rows),
    (list) => webhookFanOut.deliveriesStep(list),
  );
  const users = new UsersService(db, clock, cursors, events);
  const tags = new TagsService(db, clock, cursors, events);
  const catalog = new CatalogService(db, clock, cursors, tags, events);
  const sales = createSalesServices({
    db,
    clock,
    cursors,
    jobs,
    logger,
    config,
    users,
    tags,
    events,
  });
  const automations = new AutomationsService(db, clock, events, sales.outbox);
  const reset = resetSandbox(async (tx, accountId) => {
    await sales.resetAccount({ tx }, accountId);
    await catalog.resetAccount({ tx }, accountId);
    // Files, uploads, imports and exports are the account's data too; the bytes go in a job.
    const removed = await files.resetAccount({ tx }, accountId);
    if (removed.files > 0)
      await jobs.enqueue({ tx }, 'files.purge', { account_id: accountId, deleted_at: removed.at });
    return { files: removed.files, uploads: removed.uploads };
  });
  const scenarioTools = {
    users,
    tags,
    catalog,
    enrollments: sales.enrollments,
    deliveries: sales.deliveries,
    postbacks: sales.postbacks,
    automations,
  };
  // Filled below, once the services its types use exist (some of them need the operations).
  const types: BatchTypes = {};
  const operations = new OperationsService(db, clock, jobs, cursors, types, events);
  const imports = new ImportsService(db, clock, cursors, operations, files);
  const exports = new ExportsService(db, clock, operations, files);
  const allowPrivate = config.webhookAllowPrivateTargets;
  const webhooks = new WebhooksService(db, clock, cursors, secretsKey, eventCatalog, allowPrivate);
  Object.assign(
    types,
    batchTypes({
      db,
      clock,
      files,
      users,
      tags,
      enrollments: sales.enrollments,
      events,
      exports,
      plans: { tags, catalog, webhooks, deliveries: sales.deliveries, automations },
      publishProduct: (tx, accountId, productId) =>
        catalog.publishProduct({ tx }, accountId, productId),
      replayDelivery: (tx, accountId, id) => webhookFanOut.requestReplay({ tx }, accountId, id),
      resetSandbox: reset,
      loadScenario: loadScenarioPart(scenarioTools, reset),
    }),
  );
  // Built once: the v3 pipeline authenticates with it and event streams re-check credentials.
  const credentials = new CredentialsService(db, clock, cursors);
  const eventStreams = new StreamsService(db, clock, logger, events, credentials);
  const rateLimits = new RateLimits(db, clock, config.rateLimit, (kind) =>
    metrics.rateLimited.inc({ kind }),
  );
  return {
    // ---- platform: the database, clock, keys and the machinery every area shares ----
    db,
    clock,
    secretsKey,
    cursors,
    jobs,
    metrics,
    /** The event types and their schemas (compiled at first use; warm() compiles them all). */
    eventCatalog,
    idempotency: new IdempotencyService(db, clock),
    rateLimits,
    audit: new AuditService(db, config.auditRetentionDays, cursors),
    // ---- access: accounts and their credentials; account settings ----
    // An account active again lets go of what waited while it was not: its emails (the outbox
    // holds them) and its webhook deliveries (they wait, due).
    accounts: new AccountsService(
      db,
      clock,
      secretsKey,
      async (scope, id) => {
        await sales.outbox.release(scope, id);
        await webhookFanOut.resume(scope, id);
      },
      config.passwordHashCost,
    ),
    credentials,
    settings: new SettingsService(db, clock),
    // ---- students and the catalog ----
    users,
    tags,
    catalog,
    publications: new PublicationsService(catalog, operations),
    // ---- sales: deliveries, transactions, enrollments, progress, email ----
    outbox: sales.outbox,
    enrollments: sales.enrollments,
    progress: sales.progress,
    deliveries: sales.deliveries,
    transactions: sales.transactions,
    postbacks: sales.postbacks,
    // ---- operations: batches and sandbox resets ----
    operations,
    sandbox: new SandboxService(operations),
    operationRunner: new OperationRunner(db, clock, types, events),
    // ---- events: the log, webhooks, event streams, automations ----
    events,
    webhooks,
    webhookDispatcher,
    webhookDeliveries: new WebhookDeliveries(db, clock, cursors, webhooks, events, operations),
    eventStreams,
    automations,
    // ---- files: uploads and stored files, imports and exports ----
    files,
    uploads,
    imports,
    exports,
    // ---- plans: the configuration as a manifest ----
    plans: new PlansService(db, clock, cursors, operations, {
      webhook: (properties) => webhooks.problems(properties),
      delivery: (properties) => sales.deliveries.problems(properties),
      diamond: (properties) => automations.problems(properties),
    }),
    /**
     * Stops what runs in the background, in order: open event streams end (clients reconnect
     * elsewhere; the server would wait for them forever), running jobs finish or are released,
     * webhook attempts under way record their outcome, the event notifier stops. The caller
     * closes the database afterwards.
     */
    async close(): Promise<void> {
      await eventStreams.closeAll();
      await jobs.close();
      await webhookDispatcher.drain();
      await events.close();
      await rateLimits.close();
    },
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
