// The bootstrap admin CLI: `npm run admin -- <group> <action> --flags`.
// Contract for scripts: success prints exactly one JSON object on stdout and exits 0. A failure
// prints a JSON `{"error":{"code","message"}}` line on stderr and exits 1; a bad command line
// exits 2 and follows that line with the usage text. Nothing here logs: secrets reach stdout only.
import { systemClock } from '../clock.ts';
import { loadConfig, type Config } from '../config.ts';
import { isUniqueViolation } from '../db/dialect.ts';
import { createDb, type Db } from '../db/knex.ts';
import { migrate } from '../db/migrate.ts';
import { closeSideConnections } from '../db/reader.ts';
import { createServices, type Services } from '../services.ts';
import { createLogger } from '../log.ts';
import { isAppError } from '../errors.ts';
import { errorMessage } from '../i18n/messages.ts';
import { loadSecretsKey } from '../secrets-key.ts';
import { SecretsKeyMismatch } from '../secrets-fingerprint.ts';
import { describeStartupError } from '../startup.ts';
import { parseFlags, UsageError } from './args.ts';
import { COMMANDS, type Command } from './commands.ts';

export interface Io {
  env: NodeJS.ProcessEnv;
  stdout(text: string): void;
  stderr(text: string): void;
}

const processIo: Io = {
  env: process.env,
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
};

export function usage(only?: Command): string {
  const lines = only ? [only.usage] : Object.values(COMMANDS).map((c) => c.usage);
  return [
    'Usage: npm run admin -- <command> [options]',
    '',
    ...lines.map((l) => '  ' + l),
    '',
    'Uses DATABASE_URL (default sqlite:data/school.db); prints one JSON object on stdout.',
    '',
  ].join('\n');
}

const errorLine = (code: string, message: string) =>
  JSON.stringify({ error: { code, message } }) + '\n';

function findCommand(argv: string[]): Command {
  const [group, action] = argv;
  if (!group) throw new UsageError('No command given');
  const found = COMMANDS[`${group} ${action}`];
  if (found) return found;
  const groups = new Set(Object.keys(COMMANDS).map((k) => k.split(' ')[0]));
  if (!groups.has(group)) throw new UsageError(`Unknown command '${group}'`);
  throw new UsageError(
    action === undefined || action.startsWith('-')
      ? `'${group}' needs an action`
      : `Unknown command '${group} ${action}'`,
  );
}

/** A failure found while running, as the stderr error object (exit 1). */
function describe(
  err: unknown,
  command: Command,
  input: unknown,
): { code: string; message: string } {
  if (isAppError(err)) {
    if (err.code === 'not_found')
      return { code: err.code, message: `No such ${command.subject(input)}` };
    if (err.code === 'tenant_mismatch')
      return {
        code: err.code,
        message: 'The administrator and the credential belong to different accounts',
      };
    return { code: err.code, message: errorMessage(err.code, 'en-US', err.params) };
  }
  if (isUniqueViolation(err))
    return {
      code: 'already_exists',
      message: command.conflict ?? 'A record with these values already exists',
    };
  return { code: 'internal_error', message: (err as Error)?.message ?? String(err) };
}

export async function runAdmin(argv: string[], io: Io = processIo): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help') {
    io.stdout(usage(COMMANDS[`${argv[0]} ${argv[1]}`]));
    return 0;
  }
  let command: Command | undefined;
  let input: unknown;
  try {
    command = findCommand(argv);
    input = command.validate(parseFlags(argv.slice(2), command.flags));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(errorLine('usage_error', err.message) + '\n' + usage(command));
    return 2;
  }

  let config: Config;
  let secretsKey: Buffer;
  try {
    config = loadConfig(io.env);
    // The server's key (same SECRETS_KEY, or the key file beside the SQLite database).
    secretsKey = loadSecretsKey(config);
  } catch (err) {
    // A variable that cannot work is the operator's to fix: exit 2, as for a bad command line.
    io.stderr(errorLine('invalid_config', (err as Error).message));
    return 2;
  }

  let db: Db | undefined;
  let services: Services | undefined;
  try {
    try {
      db = createDb(config.databaseUrl, {
        schema: config.databaseSchema,
        poolMax: config.databasePoolMax,
        sessionUrl: config.databaseSessionUrl,
      });
      // The CLI may run before the server ever did: bring the schema up to date first.
      await migrate(db);
    } catch (err) {
      const known = describeStartupError(err, { databaseUrl: config.databaseUrl });
      io.stderr(errorLine('database_unavailable', known?.message ?? (err as Error)?.message));
      return 1;
    }
    services = await createServices({
      config,
      db,
      clock: systemClock,
      logger: createLogger('silent'),
      secretsKey,
    });
    const result = await command.run(services, input);
    io.stdout(JSON.stringify(result) + '\n');
    return 0;
  } catch (err) {
    if (err instanceof SecretsKeyMismatch) {
      // Nothing was sealed with the wrong key: the check runs before any service is built.
      io.stderr(errorLine(err.code, err.message));
      return err.exitCode;
    }
    const e = describe(err, command, input);
    io.stderr(errorLine(e.code, e.message));
    return 1;
  } finally {
    // Closing the pools is what lets the process exit on its own.
    await services?.close();
    await db?.destroy();
    if (db) await closeSideConnections(db);
  }
}
