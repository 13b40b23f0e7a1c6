// How a process that cannot start says so: one line naming what to change, never a stack trace.
// Exit code 2 for configuration the operator must fix (a variable, the key), 1 for the world not
// being as expected (a port in use, the database away). Shared by `npm start`, `npm run worker`
// and `npm run mock`.

/** A start-up failure with an operator-facing message and its exit code. */
export class StartupError extends Error {
  readonly exitCode: 1 | 2;
  constructor(message: string, exitCode: 1 | 2 = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** A configuration value that cannot work: names the variable and what would. */
export class ConfigError extends StartupError {
  readonly variable: string;
  constructor(variable: string, detail: string) {
    super(`${variable}: ${detail}`, 2);
    this.variable = variable;
  }
}

const redact = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');

/**
 * The one line for an error met while starting. `where` names what was being done (listening,
 * opening the database) so a raw errno still reads as a sentence.
 */
export function describeStartupError(
  err: unknown,
  ctx: { host?: string; port?: number; databaseUrl?: string } = {},
): StartupError | undefined {
  if (err instanceof StartupError) return err;
  const e = err as NodeJS.ErrnoException & { code?: string; address?: string; port?: number };
  const code = e?.code;
  if (code === 'EADDRINUSE')
    return new StartupError(
      `port ${e.port ?? ctx.port} on ${e.address ?? ctx.host} is already in use: stop the other ` +
        'process or set PORT (and HOST) to a free one',
    );
  if (code === 'EACCES' && e.syscall === 'listen')
    return new StartupError(
      `not allowed to listen on port ${e.port ?? ctx.port}: set PORT to one above 1023`,
    );
  if (code === 'EADDRNOTAVAIL')
    return new StartupError(`HOST ${ctx.host} is not an address of this machine: set HOST`, 2);
  const db = ctx.databaseUrl ? redact(ctx.databaseUrl) : 'the database';
  if (
    code &&
    ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH'].includes(code)
  )
    return new StartupError(
      `cannot reach the database at ${db} (${code}): is PostgreSQL running? Check DATABASE_URL`,
    );
  // PostgreSQL: invalid password, no such role, no such database.
  if (code === '28P01' || code === '28000' || code === '3D000')
    return new StartupError(
      `the database at ${db} refused the connection: ${e.message}; check DATABASE_URL`,
    );
  if (code === 'SQLITE_CANTOPEN')
    return new StartupError(
      `cannot open the SQLite database ${db}: check DATABASE_URL and the folder's permissions`,
    );
  return undefined;
}

/**
 * Runs a process's start; on a known start-up failure prints its one line on stderr and exits
 * with its code. Anything unknown keeps its stack (that is a defect to report).
 */
export async function startOrExit<T>(
  name: string,
  ctx: () => { host?: string; port?: number; databaseUrl?: string },
  start: () => Promise<T>,
): Promise<T> {
  try {
    return await start();
  } catch (err) {
    const known = describeStartupError(err, ctx());
    if (!known) throw err;
    process.stderr.write(`${name}: ${known.message}\n`);
    process.exit(known.exitCode);
  }
}
