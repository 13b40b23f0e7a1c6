// CPU time of one PostgreSQL database's backends, from Linux /proc (the server
// runs on this machine): scripts/bench.ts shows the database's CPU apart from the rest of the
// machine, which would otherwise count it as "other procs" and call every PostgreSQL phase
// disturbed.
import pg from 'pg';
import { pidCpuMs } from '../scripts/proc-cpu.ts';

/** CPU ms of each backend of the database, by pid, at one moment. */
export type BackendSample = Map<number, number>;

/**
 * Samples the backends of the URL's database (every connection to it but the sampler's own:
 * client backends, and autovacuum workers while they work there). WAL writer and checkpointer
 * serve the whole cluster and are left to "other procs".
 */
export class PgBackendCpu {
  private readonly client: pg.Client;
  private readonly ready: Promise<unknown>;

  constructor(url: string) {
    this.client = new pg.Client({ connectionString: url });
    this.ready = this.client.connect();
  }

  /** Null when the backends cannot be read (no /proc, the server on another machine). */
  async sample(): Promise<BackendSample | null> {
    await this.ready;
    const { rows } = await this.client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    const out: BackendSample = new Map();
    for (const { pid } of rows) {
      const ms = pidCpuMs(pid);
      if (ms !== null) out.set(pid, ms);
    }
    return rows.length > 0 && out.size === 0 ? null : out;
  }

  close(): Promise<void> {
    return this.client.end();
  }
}

/**
 * CPU ms the backends used between two samples: a backend seen in both counts its difference, one
 * that started in between all its time; one that ended in between is lost (pools keep theirs open
 * for a whole phase).
 */
export function backendCpuMs(a: BackendSample | null, b: BackendSample | null): number | null {
  if (!a || !b) return null;
  let ms = 0;
  for (const [pid, now] of b) ms += now - (a.get(pid) ?? 0);
  return ms;
}
