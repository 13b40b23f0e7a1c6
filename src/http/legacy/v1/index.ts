// The v1 routes (/api/v1), declared relative to the generation.
import Router from '@koa/router';
import type { LegacyRouteDeps } from '../deps.ts';
import { bounceRoutes } from './bounce.ts';
import { progressRoutes } from './progress.ts';
import { tagRoutes } from './tags.ts';
import { usuarioRoutes } from './usuarios.ts';

export function v1Router(deps: LegacyRouteDeps): Router {
  const router = new Router();
  // Fixed segments (`/usuario/lista_por_tag/...`) never collide with `/usuario/:ref`: a ref is
  // one segment, and every fixed route has more.
  tagRoutes(router, deps);
  progressRoutes(router, deps);
  bounceRoutes(router, deps);
  usuarioRoutes(router, deps);
  return router;
}
