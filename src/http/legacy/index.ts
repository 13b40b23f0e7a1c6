// Placeholder until the legacy (v1/v2) surface lands.
import type { Middleware } from 'koa';
import type { LegacyDeps } from './deps.ts';

export function legacyRoutes(_deps: LegacyDeps): Middleware {
  return (_ctx, next) => next();
}
