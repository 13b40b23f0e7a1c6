// `npm run worker`: the background workers alone, no HTTP (several of them, and several
// `npm start` instances with WORKERS=false, may share one PostgreSQL database). SIGTERM or SIGINT:
// stop claiming, let each running job finish its current unit or release it, then exit.
import './node-version.mjs'; // first: before anything native loads
import { systemClock } from './clock.ts';
import { loadConfig, type Config } from './config.ts';
import { holdSqliteLock } from './db/process-lock.ts';
import { startOrExit } from './startup.ts';
import { loadEnvFile } from './env-file.ts';

let seen: Config | undefined;
const { config, logger, db, services, metrics, closeSideConnections } = await startOrExit(
  'npm run worker',
  () => ({ host: seen?.host, port: seen?.metricsPort, databaseUrl: seen?.databaseUrl }),
  async () => {
    loadEnvFile();
    const config = (seen = loadConfig());
    holdSqliteLock(config.databaseUrl, 'worker');
    // The module graph loads only once the configuration is known to work (a bad variable is
    // reported in well under a second).
    const { createDb } = await import('./db/knex.ts');
    const { migrate } = await import('./db/migrate.ts');
    const { createLogger } = await import('./log.ts');
    const { createServices } = await import('./services.ts');
    const { startWorkers } = await import('./tasks/index.ts');
    const { serveMetrics } = await import('./http/metrics.ts');
    const { closeSideConnections } = await import('./db/reader.ts');
    const logger = createLogger(config.logLevel, undefined, config.logFormat);
    const db = createDb(config.databaseUrl, {
      schema: config.databaseSchema,
      poolMax: config.databasePoolMax,
      sessionUrl: config.databaseSessionUrl,
    });
    await migrate(db);
    const services = await createServices({ config, db, clock: systemClock, logger });
    await startWorkers(services);
    // Webhook deliveries and the job queue are counted here too: a worker has its metrics listener.
    const metrics =
      config.metricsPort === undefined
        ? undefined
        : await serveMetrics(services.metrics, config.metricsPort, config.host);
    return { config, logger, db, services, metrics, closeSideConnections };
  },
);
// Handlers first, the 'worker running' line after: a SIGTERM before process.on() would kill the
// process outright, without releasing its jobs.
let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker stopping: finishing or releasing running jobs');
    await services.close();
    await metrics?.close();
    await db.destroy();
    await closeSideConnections(db);
    logger.info('worker stopped');
    process.exit(0);
  });
}

logger.info(
  {
    worker: services.jobs.workerId,
    ...(metrics ? { metrics_port: metrics.port } : {}),
  },
  'worker running',
);
