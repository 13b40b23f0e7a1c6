// A PgBouncer of the test's own in transaction mode, in front of TEST_DATABASE_URL's server, on a
// free port. Each entry of `databases` is a pooled database name -> its server-side settings
// (the test suite's schema goes in `connect_query`: a SET on a pooled connection would stay on
// whichever server connection it ran on). As root it runs as `postgres`: PgBouncer refuses root.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './app.ts';

const BIN = '/usr/sbin/pgbouncer';

export function pgbouncerProblem(): string | null {
  if (!fs.existsSync(BIN)) return `${BIN} is missing (apt-get install -y pgbouncer)`;
  return null;
}

export interface Bouncer {
  /** postgres:// URL of `name` through the pooler. */
  url(name: string): string;
  stop(): void;
}

export async function startPgbouncer(
  server: string,
  databases: Record<string, { schema?: string; poolSize?: number }>,
): Promise<Bouncer> {
  const u = new URL(server);
  const root = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-pgbouncer-'));
  const port = await freePort();
  const entries = Object.entries(databases).map(([name, d]) => {
    const parts = [
      `host=${u.hostname}`,
      `port=${u.port || 5432}`,
      `dbname=${u.pathname.slice(1)}`,
      `user=${decodeURIComponent(u.username)}`,
      `password=${decodeURIComponent(u.password)}`,
    ];
    if (d.poolSize) parts.push(`pool_size=${d.poolSize}`);
    if (d.schema) parts.push(`connect_query='SET search_path TO ${d.schema}'`);
    return `${name} = ${parts.join(' ')}`;
  });
  const ini = [
    '[databases]',
    ...entries,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    "unix_socket_dir = ''",
    // Clients are not authenticated (127.0.0.1, the test's own); the server login is in each entry.
    'auth_type = any',
    'pool_mode = transaction',
    'default_pool_size = 4',
    'max_client_conn = 500',
    `logfile = ${path.join(dir, 'log')}`,
    `pidfile = ${path.join(dir, 'pid')}`,
    'ignore_startup_parameters = extra_float_digits',
  ].join('\n');
  const config = path.join(dir, 'pgbouncer.ini');
  fs.writeFileSync(config, ini + '\n');
  if (root) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
  execFileSync(
    root ? 'runuser' : BIN,
    root ? ['-u', 'postgres', '--', BIN, '-d', config] : ['-d', config],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const pidFile = path.join(dir, 'pid');
  for (let i = 0; i < 100 && !fs.existsSync(pidFile); i++)
    await new Promise((r) => setTimeout(r, 50));
  const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  return {
    url: (name) => `postgres://pooled@127.0.0.1:${port}/${name}`,
    stop() {
      try {
        process.kill(pid, 'SIGINT');
      } catch {
        // gone already
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
