// Entry: load config, open the database (migrations run in createApp), bootstrap an empty
// database with a demo account, serve HTTP, run the workers in-process (unless WORKERS=false),
// and shut down gracefully on SIGTERM/SIGINT.
import './node-version.mjs'; // first: before anything native loads
import net from 'node:net';
import { loadConfig, type Config } from './config.ts';
import { holdSqliteLock } from './db/process-lock.ts';
import { startOrExit } from './startup.ts';
import { loadEnvFile } from './env-file.ts';

/** A port free right now on host (the OS picks it). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

let config: Config | undefined;
// Start-up failures (a variable that cannot work, the port taken, the database away, another
// server on the same SQLite file) are one line on stderr and exit 2 or 1, never a stack trace.
const { app, port } = await startOrExit(
  'npm start',
  () => ({ host: config?.host, port: config?.port, databaseUrl: config?.databaseUrl }),
  async () => {
    loadEnvFile();
    config = loadConfig();
    // PORT=0 asks for any free port, and the public URL (OAuth issuer, auto-login links) must
    // name the real one, so the port is chosen before the app is built. Should another process
    // take it in between, listen fails (EADDRINUSE).
    if (config.port === 0 && !process.env.PUBLIC_BASE_URL) {
      config = loadConfig({ ...process.env, PORT: String(await freePort(config.host)) });
    }
    holdSqliteLock(config.databaseUrl, 'server');
    // The app's module graph loads only once the configuration is known to work: a variable
    // that cannot work is reported in well under a second, not after loading every module.
    const { createApp } = await import('./app.ts');
    const { bootstrapDemo } = await import('./cli/bootstrap.ts');
    const app = await createApp(config);
    await bootstrapDemo(app.services.accounts, app.logger, config);
    const port = await app.listen();
    if (config.workers) await app.startWorkers();
    // A schema that cannot compile fails the start here rather than a request later.
    void app.warm().catch((err) => {
      app.logger.fatal({ err }, 'the contract does not compile');
      process.exit(1);
    });
    return { app, port };
  },
);
// Handlers first, the 'listening' line after: whoever reads that line may stop the process at
// once, and a SIGTERM before process.on() would kill it outright (no drain, no clean close).
let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    app.logger.info({ signal }, 'shutting down: finishing in-flight requests and jobs');
    await app.close();
    app.logger.info('stopped');
    process.exit(0);
  });
}

app.logger.info(
  {
    host: config!.host,
    port,
    release: app.release,
    docs: `${config!.publicBaseUrl}/docs`,
    workers: config!.workers,
    ...(app.metricsPort !== undefined ? { metrics_port: app.metricsPort } : {}),
  },
  'School Platform API listening',
);
