// graphile-worker's connections, with connection losses made retryable. graphile-worker records a
// job's outcome (complete, fail) through `withRetries`, which retries only the SQLSTATEs it lists
// (serialization, deadlock, 57P03 cannot_connect_now) and a few socket codes, and does not wait
// for the call: any other error there is an unhandled rejection, which ended the process when the
// server restarted (57P01 admin_shutdown, ECONNREFUSED, "Connection terminated"). Such errors
// leave this pool as 57P03, with the original as `cause`: the outcome is written once the server
// is back (backoff from 3 s up to 2 min), so a job that finished is not run again hours later
// when its lock expires.
import pg from 'pg';
import { isConnectionLoss } from '../db/pg-errors.ts';

function retryable(err: unknown): unknown {
  if (!isConnectionLoss(err) || (err as { code?: string }).code === '57P03') return err;
  const e = new Error((err as Error).message, { cause: err }) as Error & { code: string };
  e.code = '57P03';
  return e;
}

export function jobQueuePool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
  // Promise form only: graphile-worker's LISTEN client uses the callback form, with its own backoff.
  (pool as { connect: unknown }).connect = (...args: unknown[]) =>
    args.length
      ? connect(...args)
      : (connect() as Promise<pg.PoolClient>).catch((err) => Promise.reject(retryable(err)));
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const result = query(...args);
      return result && typeof (result as Promise<unknown>).then === 'function'
        ? (result as Promise<unknown>).catch((err) => Promise.reject(retryable(err)))
        : result;
    };
  });
  return pool;
}
