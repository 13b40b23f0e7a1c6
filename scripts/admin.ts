// `npm run admin -- <command>`: thin entry; the CLI lives in src/cli/admin.ts.
import '../src/node-version.mjs'; // first: before anything native loads
import { runAdmin } from '../src/cli/admin.ts';
import { loadEnvFile } from '../src/env-file.ts';
import { StartupError } from '../src/startup.ts';

// stdout carries exactly one JSON result. Libraries that print with console.log (knex prints its
// connection warnings that way) are sent to stderr, where the error JSON stays the last line.
console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args);

// The same .env as the server's, so the CLI opens the same database with the same SECRETS_KEY.
try {
  loadEnvFile();
} catch (err) {
  if (!(err instanceof StartupError)) throw err;
  process.stderr.write(
    `${JSON.stringify({ error: { code: 'invalid_config', message: err.message } })}\n`,
  );
  process.exit(err.exitCode);
}
process.exitCode = await runAdmin(process.argv.slice(2));
