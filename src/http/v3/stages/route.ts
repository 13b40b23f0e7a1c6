// Stage "route": the operation a request names, and the deprecation headers it carries. A path
// that names no operation of the contract is 404 not_found, with the nearest operation suggested
// when it looks like a typo of one; a wrong method 405; a path whose only fault is an undecodable
// id 404. (503 operation_not_catalogued is for an operation of the contract that this server does
// not serve: stage "execute".)
import type { Context } from 'koa';
import type { Clock } from '../../../clock.ts';
import { AppError } from '../../../errors.ts';
import type { Operation } from '../catalog.ts';
import { V3Router, V3_BASE, type Match } from '../router.ts';
import { unknownRoute } from '../nearest-route.ts';

export function routeStage(catalog: Operation[], clock: Clock, publicBaseUrl: string) {
  const router = new V3Router(catalog);
  const deprecationLink = `<${publicBaseUrl}${V3_BASE}/capabilities>; rel="deprecation"`;

  return function route(ctx: Context): Match {
    const match = router.find(ctx.method, ctx.path);
    if (!match) {
      const allow = router.allowed(ctx.path);
      if (allow.length)
        throw new AppError('method_not_allowed', { headers: { Allow: allow.join(', ') } });
      if (router.routesWithBadEscapes(ctx.path)) throw new AppError('not_found');
      throw new AppError('not_found', {
        details: [unknownRoute(V3_BASE, router.nearest(ctx.method, ctx.path))],
      });
    }
    const d = match.op.deprecation;
    if (d) {
      ctx.set('Deprecation', `@${Math.floor(Date.parse(d.deprecatedAt) / 1000)}`);
      ctx.set('Sunset', new Date(d.sunsetAt).toUTCString());
      ctx.set('Link', deprecationLink);
      if (clock.now().getTime() >= Date.parse(d.sunsetAt)) throw new AppError('operation_sunset');
    }
    return match;
  };
}
