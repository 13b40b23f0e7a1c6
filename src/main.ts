// Entry: load config, open the database (migrations run in createApp), bootstrap an empty
// database with a demo account, serve HTTP, and shut down gracefully on SIGTERM/SIGINT.
import { loadConfig } from './config.ts';
import { createApp } from './app.ts';
import { bootstrapDemo } from './cli/bootstrap.ts';

const config = loadConfig();
const app = await createApp(config);
await bootstrapDemo(app.services.accounts, app.logger, config);
const port = await app.listen();
app.logger.info({ host: config.host, port, release: app.release }, 'School Platform API listening');

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    app.logger.info({ signal }, 'shutting down: finishing in-flight requests');
    await app.close();
    app.logger.info('stopped');
    process.exit(0);
  });
}
