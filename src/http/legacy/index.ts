// The legacy surfaces: /api/v1 (v1), /api/v2 and /api/third (v2). Each request is authenticated
// with the school API key, then handed to its generation's @koa/router; anything unmatched is a
// 404 and every failure is rendered once, in that generation's envelope.
import type { Context, Middleware } from 'koa';
import type Router from '@koa/router';
import { AppError } from '../../errors.ts';
import { closedByClient } from '../body.ts';
import { authenticateLegacy } from './authenticate.ts';
import type { LegacyDeps, LegacyRouteDeps } from './deps.ts';
import { renderLegacyError, toLegacyError, type Generation } from './render.ts';
import { legacyContract } from './contract.ts';
import { v1Router } from './v1/index.ts';
import { v2Router } from './v2/index.ts';
import { requestLog } from '../common.ts';
import { rejectNul } from '../v3/validation.ts';
import { negotiateLocale } from '../../i18n/messages.ts';

/** Routers declare paths relative to their generation (`/usuario`, `/third/delivery`). */
export interface LegacyRouters {
  v1?: Router;
  v2?: Router;
}

interface Surface {
  base: string;
  generation: Generation;
  /** Stripped before routing: /api/third/delivery reaches the v2 route `/third/delivery`. */
  mount: string;
}

const SURFACES: Surface[] = [
  { base: '/api/v1', generation: 'v1', mount: '/api/v1' },
  { base: '/api/v2', generation: 'v2', mount: '/api/v2' },
  { base: '/api/third', generation: 'v2', mount: '/api' },
];

function surfaceOf(path: string): Surface | undefined {
  return SURFACES.find((s) => path === s.base || path.startsWith(s.base + '/'));
}

export function legacyRoutes(deps: LegacyDeps, routers: LegacyRouters = {}): Middleware {
  const dispatch = {
    v1: routers.v1?.routes(),
    v2: routers.v2?.routes(),
  };

  async function route(ctx: Context, surface: Surface): Promise<void> {
    const handle = dispatch[surface.generation];
    // No record is named with U+0000 (PostgreSQL cannot even compare it): not found. In a query
    // value it is a bad parameter (422), as on v3.
    if (/%00/.test(ctx.path)) throw new AppError('not_found');
    rejectNul({ ...ctx.query }, 'parameter', negotiateLocale(ctx.get('accept-language')));
    if (handle) {
      // @koa/router matches on newRouterPath when set, so one router serves several mounts.
      ctx.newRouterPath = ctx.path.slice(surface.mount.length) || '/';
      // Legacy surfaces own their prefixes: nothing downstream answers for them.
      await handle(ctx as any, async () => {});
      if (ctx._matchedRoute) ctx.state.route = surface.mount + String(ctx._matchedRoute);
    }
    if (ctx.status === 404 && ctx.body == null) throw new AppError('not_found');
  }

  return async function legacy(ctx, next) {
    const surface = surfaceOf(ctx.path);
    if (!surface) return next();
    try {
      const source = ctx.ip || 'unknown';
      await deps.rateLimits.consume('source', source);
      // The generation's own contract is public, like v3's.
      if (ctx.path === `${surface.base}/openapi.json` && surface.base !== '/api/third') {
        if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw new AppError('not_found');
        ctx.type = 'application/json';
        ctx.body = legacyContract(surface.generation).json;
        return;
      }
      ctx.state.legacy = await authenticateLegacy(ctx, deps.db);
      try {
        await deps.rateLimits.consume('account', String(ctx.state.legacy.accountId));
      } catch (err) {
        // A rejected call does not count: give back the source point too.
        if ((err as AppError).code === 'rate_limit_exceeded')
          await deps.rateLimits.refund('source', source);
        throw err;
      }
      await route(ctx, surface);
    } catch (err) {
      // The client hung up mid-body: nobody to answer, and not our failure (as on v3).
      if (closedByClient(ctx, err)) return;
      const e = toLegacyError(err);
      if (e.status >= 500) requestLog(ctx, deps.logger).error({ err }, 'legacy');
      renderLegacyError(ctx, surface.generation, e);
    }
  };
}

/** The legacy generations over the app's services: what app.ts mounts. */
export function legacyApi(deps: LegacyDeps & LegacyRouteDeps): Middleware {
  return legacyRoutes(deps, { v1: v1Router(deps), v2: v2Router(deps) });
}
