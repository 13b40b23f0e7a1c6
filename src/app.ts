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
import { closeSideConnections } from './db/statements.ts';
import { createLogger, type Logger } from './log.ts';
import { createServices } from './services.ts';
import { startWorkers } from './tasks/index.ts';
import { common } from './http/common.ts';
import { buildCatalog } from './http/v3/catalog.ts';
import { v3Pipeline } from './http/v3/pipeline.ts';
import { metaHandlers } from './http/v3/handlers/meta.ts';
import { credentialHandlers } from './http/v3/handlers/credentials.ts';
import { userHandlers } from './http/v3/handlers/users.ts';
import { catalogHandlers } from './http/v3/handlers/catalog.ts';
import { operationHandlers } from './http/v3/handlers/operations.ts';
import { payloadChecks } from './http/v3/payloads.ts';
import { asyncHandlers } from './http/v3/handlers/async.ts';
import { legacyRoutes } from './http/legacy/index.ts';
import { createOAuth } from './oauth/index.ts';
import type { Handlers } from './http/v3/handlers/types.ts';

export interface AppOptions {
  clock?: Clock;
  /** An OpenAPI document to serve instead of generated/openapi.json (test fixtures). */
  spec?: any;
  db?: Db;
  logger?: Logger;
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
  const logger = options.logger ?? createLogger(config.logLevel);
  const db = options.db ?? createDb(config.databaseUrl, { schema: config.databaseSchema });
  await migrate(db);
  const spec = options.spec ?? loadSpec();
  const release: string = spec.info.version;
  const catalog = buildCatalog(spec);
  const services = await createServices({ config, db, clock, logger });
  const { cursors } = services;

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
    ...credentialHandlers(services.credentials, cursors),
    ...userHandlers(config.publicBaseUrl, services.users, services.tags),
    ...catalogHandlers(services.catalog),
    ...operationHandlers(services.operations, payloadChecks(spec)),
    ...asyncHandlers(services.publications, services.sandbox),
  };

  const koa = new Koa();
  koa.silent = true;
  const onError = (err: unknown, ctx?: Koa.Context) => {
    // A client that hangs up mid-request is routine, not our failure: one info line, no stack.
    const code = (err as { code?: string } | null)?.code;
    if (ctx?.state.clientClosed || (code && CLIENT_GONE.has(code)))
      return logger.info({ request_id: ctx?.state.requestId, code }, 'client closed the request');
    logger.error({ err, request_id: ctx?.state.requestId }, 'unhandled error');
  };
  koa.on('error', (err, ctx) => onError(err, ctx));
  koa.use(common(release, logger));
  koa.use(
    v3Pipeline({
      db,
      clock,
      catalog,
      handlers,
      release,
      publicBaseUrl: config.publicBaseUrl,
      services: { ...services, human: oauth.verifier },
      onError,
    }),
  );
  koa.use(legacyRoutes({ db, clock, logger, rateLimits: services.rateLimits }));
  koa.use(oauth.routes);

  const server = http.createServer(koa.callback());

  return {
    koa,
    db,
    clock,
    logger,
    services,
    server,
    release,
    async listen(port = config.port, host = config.host): Promise<number> {
      await new Promise<void>((resolve) => server.listen(port, host, resolve));
      return (server.address() as { port: number }).port;
    },
    /** Runs the background workers in this process (`npm start` unless WORKERS=false). */
    async startWorkers(): Promise<void> {
      await startWorkers(services);
    },
    /** Stops accepting, lets in-flight requests and running jobs finish, closes the database. */
    async close(): Promise<void> {
      await services.jobs.close();
      if (server.listening) {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
      }
      await db.destroy();
      await closeSideConnections(db);
    },
  };
}
