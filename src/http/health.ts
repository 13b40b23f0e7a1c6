// Health checks for load balancers and orchestrators, on the root host, outside /api/v3 (no
// credential, no rate limit, no audit entry):
// - GET /healthz: the process answers (liveness). Never touches the database, so a database
//   outage does not get every instance restarted.
// - GET /readyz: this instance can serve (readiness): the database answers, every migration this
//   code knows is applied, and the job engine runs when this process is meant to run workers.
//   503 names the failing parts; the reasons behind them go to the log, not to the caller.
import type { Middleware } from 'koa';
import type { Db } from '../db/engine.ts';
import { pendingMigrations } from '../db/migrate.ts';
import type { JobEngine } from '../jobs/types.ts';
import type { Logger } from '../log.ts';

export interface HealthDeps {
  db: Db;
  jobs: JobEngine;
  /** True when this process runs the workers (`npm start` unless WORKERS=false). */
  workers: () => boolean;
  logger: Logger;
}

/** A check slower than this fails: a probe must answer within the balancer's timeout. */
const CHECK_TIMEOUT_MS = 2000;

type Check = 'ok' | 'failed' | 'timeout' | 'pending' | 'not_running' | 'not_run_here';

function withTimeout<T>(p: Promise<T>): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), CHECK_TIMEOUT_MS);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export function health(deps: HealthDeps): Middleware {
  async function database(log: Logger): Promise<{ database: Check; migrations: Check }> {
    try {
      const pending = await withTimeout(pendingMigrations(deps.db));
      if (pending === 'timeout') return { database: 'timeout', migrations: 'failed' };
      if (pending.length) log.warn({ pending }, 'readiness: migrations not applied');
      return { database: 'ok', migrations: pending.length ? 'pending' : 'ok' };
    } catch (err) {
      log.warn({ err }, 'readiness: database check failed');
      return { database: 'failed', migrations: 'failed' };
    }
  }

  return async (ctx, next) => {
    if (ctx.path !== '/healthz' && ctx.path !== '/readyz') return next();
    ctx.state.route = ctx.path;
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.status = 405;
      ctx.set('Allow', 'GET, HEAD');
      ctx.body = { status: 'method_not_allowed' };
      return;
    }
    ctx.set('Cache-Control', 'no-store');
    if (ctx.path === '/healthz') {
      ctx.body = { status: 'ok' };
      return;
    }
    const log: Logger = ctx.state.log ?? deps.logger;
    const checks: Record<string, Check> = await database(log);
    const status = deps.jobs.status;
    checks.jobs = !deps.workers() ? 'not_run_here' : status === 'running' ? 'ok' : 'not_running';
    const failing = Object.entries(checks)
      .filter(([, v]) => v !== 'ok' && v !== 'not_run_here')
      .map(([k]) => k);
    ctx.status = failing.length ? 503 : 200;
    ctx.body = failing.length
      ? { status: 'unavailable', failing, checks }
      : { status: 'ok', checks };
  };
}
