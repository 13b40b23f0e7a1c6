// The operation a path that routes nowhere most plausibly meant (`/api/v3/user/1` ->
// `GET /users/{user_id}`), for the 404 of the server and of the mock: templates with as many
// segments, a parameter matching any segment, literals compared by edit distance; a typo of a
// third of the literal text at most, and an operation of the same method before another.
import { distance } from '../../domain/shared/nearest.ts';

export interface RouteShape {
  method: string;
  /** Relative to the API's base, e.g. /users/{user_id}. */
  path: string;
}

export function nearestRoute<T extends RouteShape>(
  ops: readonly T[],
  method: string,
  base: string,
  path: string,
): T | undefined {
  // A typo is short; a long path (a probe, a fuzzer) is not worth the edit distances.
  if (!path.startsWith(base + '/') || path.length > 200) return undefined;
  const segments = path.slice(base.length + 1).split('/');
  let best: T | undefined;
  let bestCost = Infinity;
  for (const op of ops) {
    const template = op.path.slice(1).split('/');
    if (template.length !== segments.length) continue;
    let cost = 0;
    let literal = 0;
    template.forEach((t, i) => {
      if (t.startsWith('{')) return;
      literal += t.length;
      cost += distance(segments[i]!, t);
    });
    if (cost === 0 || cost > Math.max(2, Math.floor(literal / 3))) continue;
    const ranked = cost + (op.method.toUpperCase() === method.toUpperCase() ? 0 : 0.5);
    if (ranked < bestCost) [best, bestCost] = [op, ranked];
  }
  return best;
}

/** The detail of a path that routes nowhere: what it may have meant, or where the list is. */
export function unknownRoute(base: string, near: RouteShape | undefined) {
  return {
    code: 'unknown_route',
    message: near
      ? `No operation has this path. Did you mean ${near.method.toUpperCase()} ${base}${near.path}?`
      : `No operation has this path; every operation is listed in /openapi.json.`,
  };
}
