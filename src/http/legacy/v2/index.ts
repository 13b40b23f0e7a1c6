// The v2 routes (/api/v2; those under /third also at /api/third), declared relative to /api/v2.
import Router from '@koa/router';
import type { LegacyRouteDeps } from '../deps.ts';
import { v2Routes } from './routes.ts';

export function v2Router(deps: LegacyRouteDeps): Router {
  const router = new Router();
  v2Routes(router, deps);
  return router;
}
