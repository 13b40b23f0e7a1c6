// Composition root: builds the database, services and the Koa app. No import-time singletons, so
// tests can boot several apps (with their own clock, database or contract) in one process.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Koa from 'koa';
import type { Config } from './config.ts';
import { systemClock, type Clock } from './clock.ts';
import { createDb, type Db } from './db/knex.ts';
import { migrate } from './db/migrate.ts';
import { closeSideConnections } from './db/reader.ts';
import { createLogger, type Logger } from './log.ts';
import { createServices } from './services.ts';
import { startWorkers } from './tasks/index.ts';
import { common, requestLog } from './http/common.ts';
import { health } from './http/health.ts';
import { requestMetrics, serveMetrics, type MetricsListener } from './http/metrics.ts';
import { buildCatalog, warmCatalog } from './http/v3/catalog.ts';
import { v3Pipeline } from './http/v3/pipeline.ts';
import { metaHandlers } from './http/v3/handlers/meta.ts';
import { credentialHandlers } from './http/v3/handlers/credentials.ts';
import { userHandlers } from './http/v3/handlers/users.ts';
import { catalogHandlers } from './http/v3/handlers/catalog.ts';
import { operationHandlers } from './http/v3/handlers/operations.ts';
import { payloadChecks } from './http/v3/payloads.ts';
import { asyncHandlers } from './http/v3/handlers/async.ts';
import { eventHandlers } from './http/v3/handlers/events.ts';
import { webhookHandlers } from './http/v3/handlers/webhooks.ts';
import { legacyApi } from './http/legacy/index.ts';
import { autoLoginRoutes } from './http/login-auto.ts';
import { createOAuth } from './oauth/index.ts';
import { docsRoutes } from './http/docs.ts';
import type { Handlers } from './http/v3/handlers/types.ts';
import { salesHandlers } from './http/v3/handlers/sales.ts';
import { enrollmentHandlers } from './http/v3/handlers/enrollments.ts';
import { progressHandlers } from './http/v3/handlers/progress.ts';
import { settingsHandlers } from './http/v3/handlers/settings.ts';
import { importHandlers } from './http/v3/handlers/imports.ts';
import { exportHandlers } from './http/v3/handlers/exports.ts';
import { planHandlers } from './http/v3/handlers/plans.ts';
import { manifestChecks } from './http/v3/manifest-schemas.ts';
import { postbackRoutes } from './http/postbacks.ts';
import { automationHandlers } from './http/v3/handlers/automations.ts';
import { eventStreamHandlers } from './http/v3/handlers/event-streams.ts';
import { fileHandlers } from './http/v3/handlers/files.ts';
import { storageRoutes } from './http/storage.ts';
import { listen } from './http/listen.ts';
import { landingRoute } from './http/landing.ts';
import { isConnectionLoss } from './db/pg-errors.ts';

export interface AppOptions {
  clock?: Clock;
  /** An OpenAPI document to serve instead of generated/openapi.json (test fixtures). */
  spec?: any;
  db?: Db;
  logger?: Logger;
  /** Where the /docs pages look for v1.yaml and v2.yaml (default spec/legacy; tests). */
  legacySpecDir?: string;
}

export function loadSpec(): any {
  const file = path.resolve(import.meta.dirname, '../generated/openapi.json');
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

export type App = Awaited<ReturnType<typeof createApp>>;

/** Socket errors that only mean the client went away (llhttp reports a body cut short). */
const CLIENT_GONE = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'HPE_INVALID_EOF_STATE']);

export async function createApp(config: Config, options: AppOptions = {}) {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel, undefined, config.logFormat);
  const db =
    options.db ??
    createDb(config.databaseUrl, {
      schema: config.databaseSchema,
      poolMax: config.databasePoolMax,
      sessionUrl: config.databaseSessionUrl,
    });
  await migrate(db);
  const spec = options.spec ?? loadSpec();
  const release: string = spec.info.version;
  const catalog = buildCatalog(spec);
  const services = await createServices({ config, db, clock, logger });
  const payloads = payloadChecks(spec);
  const manifests = manifestChecks(spec);

  const oauth = await createOAuth({
    db,
    clock,
    config,
    logger,
    accounts: services.accounts,
    secretsKey: services.secretsKey,
  });

  const handlers: Handlers = {
    ...metaHandlers({ spec, release, catalog, audit: services.audit }),
    ...credentialHandlers(services.credentials),
    ...userHandlers(config.publicBaseUrl, services.users, services.tags),
    ...catalogHandlers(services.catalog),
    ...operationHandlers(services.operations, payloads),
    ...asyncHandlers(services.publications, services.sandbox),
    ...eventHandlers(services.events),
    ...webhookHandlers(services.webhooks, services.webhookDeliveries),
    ...automationHandlers(services.automations),
    ...eventStreamHandlers(services.eventStreams),
    ...salesHandlers(config.publicBaseUrl, services.deliveries, services.transactions),
    ...enrollmentHandlers(services.enrollments),
    ...progressHandlers(services.progress),
    ...fileHandlers(services.uploads, services.files),
    ...settingsHandlers(config.publicBaseUrl, services.settings),
    ...importHandlers(services.imports),
    ...exportHandlers(services.exports),
    ...planHandlers(services.plans, manifests),
  };

  const koa = new Koa();
  koa.silent = true;
  // Behind TRUST_PROXY load balancers, the client's address (per-source limit, audit) is the one
  // the outermost of them appended to X-Forwarded-For, not the balancer's own.
  koa.proxy = config.trustProxy > 0;
  koa.maxIpsCount = config.trustProxy;
  const onError = (err: unknown, ctx?: Koa.Context) => {
    // A client that hangs up mid-request is routine, not our failure: one info line, no stack.
    const code = (err as { code?: string } | null)?.code;
    const log = requestLog(ctx, logger);
    if (ctx?.state.clientClosed || (code && CLIENT_GONE.has(code)))
      return log.info({ code }, 'client closed the request');
    // Expected while the database restarts: the answer is 503, the line a warning without a stack.
    if (isConnectionLoss(err)) return log.warn({ err: String(err) }, 'database unavailable');
    log.error({ err }, 'unhandled error');
  };
  koa.on('error', (err, ctx) => onError(err, ctx));
  koa.use(common(release, logger));
  // Probes before the request metrics: a balancer's every-few-seconds probe is not traffic.
  koa.use(health({ db, jobs: services.jobs, workers: () => config.workers, logger }));
  koa.use(requestMetrics(services.metrics));
  const streamAudits = new Set<Promise<void>>();
  koa.use(
    v3Pipeline({
      db,
      clock,
      catalog,
      handlers,
      release,
      publicBaseUrl: config.publicBaseUrl,
      services: {
        credentials: services.credentials,
        idempotency: services.idempotency,
        rateLimits: services.rateLimits,
        audit: services.audit,
        human: oauth.verifier,
      },
      onError,
      streamAudits,
    }),
  );
  koa.use(storageRoutes({ files: services.files, uploads: services.uploads, clock, onError }));
  koa.use(
    postbackRoutes({ postbacks: services.postbacks, rateLimits: services.rateLimits, onError }),
  );
  koa.use(
    legacyApi({
      db,
      clock,
      logger,
      rateLimits: services.rateLimits,
      services,
      publicBaseUrl: config.publicBaseUrl,
    }),
  );
  koa.use(autoLoginRoutes(services));
  koa.use(docsRoutes({ spec, legacyDir: options.legacySpecDir }));
  koa.use(landingRoute(release));
  koa.use(oauth.routes);

  const server = http.createServer(koa.callback());
  let metricsListener: MetricsListener | undefined;

  return {
    koa,
    db,
    clock,
    logger,
    services,
    server,
    release,
    async listen(port = config.port, host = config.host): Promise<number> {
      await listen(server, port, host);
      // Metrics on a listener of their own (METRICS_PORT), never on the public one.
      if (config.metricsPort !== undefined && !metricsListener)
        metricsListener = await serveMetrics(services.metrics, config.metricsPort, host);
      return (server.address() as { port: number }).port;
    },
    /** The port metrics are served on (after listen), when METRICS_PORT is set. */
    get metricsPort(): number | undefined {
      return metricsListener?.port;
    },
    /**
     * Compiles, in the background, every schema not compiled yet (the server, after listen): the
     * request validators, batch payloads, manifest entries and event types. Fails on the first
     * that does not compile.
     */
    async warm(): Promise<void> {
      await warmCatalog(catalog);
      await payloads.warm();
      await manifests.warm();
      await services.eventCatalog.warm();
    },
    /** Runs the background workers in this process (`npm start` unless WORKERS=false). */
    async startWorkers(): Promise<void> {
      await startWorkers(services);
    },
    /** Stops accepting, lets in-flight requests and running jobs finish, closes the database. */
    async close(): Promise<void> {
      await services.close();
      await metricsListener?.close();
      if (server.listening) {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
      }
      // An event stream is audited once its response has closed, which may be just now.
      await Promise.all(streamAudits);
      await db.destroy();
      await closeSideConnections(db);
    },
  };
}
