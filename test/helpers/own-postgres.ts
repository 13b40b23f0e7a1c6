// A PostgreSQL server of the test's own (initdb into a temp folder, a free port, its socket in
// that folder), for tests that stop and start the engine: the machine's shared cluster is never
// restarted. As root (CI), the server runs as the `postgres` user: initdb refuses root.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './app.ts';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface OwnPostgres {
  port: number;
  /** A database of its own on this server (created empty). */
  url: string;
  start(): void;
  /** `fast` ends the sessions (57P01) and refuses new ones; `immediate` is a crash. */
  stop(mode?: 'fast' | 'immediate'): void;
  remove(): void;
}

/** Why the test cannot start its own server, or null when it can. */
export function ownPostgresProblem(): string | null {
  for (const bin of ['initdb', 'pg_ctl', 'psql'])
    if (!fs.existsSync(path.join(BIN, bin))) return `${path.join(BIN, bin)} is missing`;
  if (process.getuid?.() === 0) {
    try {
      execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    } catch {
      return 'running as root and there is no postgres user to run initdb as';
    }
  }
  return null;
}

export function skippedBanner(what: string, reason: string): void {
  const bar = '!'.repeat(78);
  console.log(`\n${bar}\n!! SKIPPED: ${what}: ${reason}\n${bar}\n`);
}

export async function ownPostgres(): Promise<OwnPostgres> {
  const root = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-pg-'));
  if (root) execFileSync('chown', ['postgres:postgres', dir]);
  const port = await freePort();
  const run = (bin: string, args: string[]) =>
    execFileSync(
      root ? 'runuser' : path.join(BIN, bin),
      root ? ['-u', 'postgres', '--', path.join(BIN, bin), ...args] : args,
      { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir },
    );
  const data = path.join(dir, 'data');
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const ctl = (args: string[]) =>
    run('pg_ctl', [
      '-D',
      data,
      '-l',
      path.join(dir, 'log'),
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      ...args,
    ]);
  ctl(['-w', 'start']);
  run('psql', ['-h', dir, '-p', String(port), '-qc', 'CREATE DATABASE school', 'postgres']);
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/school`,
    start: () => ctl(['-w', 'start']),
    stop: (mode = 'fast') => ctl(['-w', '-m', mode, 'stop']),
    remove() {
      try {
        ctl(['-w', '-m', 'immediate', 'stop']);
      } catch {
        // already stopped
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
