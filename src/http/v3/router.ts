// Routes v3 requests with find-my-way (a radix tree): lookup cost grows with the path's length,
// not with the number of operations in the contract.
import FindMyWay from 'find-my-way';
import { distance } from '../../domain/shared/nearest.ts';
import type { Operation } from './catalog.ts';

export const V3_BASE = '/api/v3';

export interface Match {
  op: Operation;
  params: Record<string, string | undefined>;
}

export class V3Router {
  // A path id longer than find-my-way's default 100 characters would not route at all and answer
  // 503 operation_not_catalogued (which tells clients to retry); it must reach the id check (404).
  private readonly tree = FindMyWay({
    ignoreTrailingSlash: false,
    caseSensitive: true,
    maxParamLength: 8192,
  });
  private readonly methods = new Set<string>();
  private readonly ops: Operation[];

  constructor(ops: Operation[]) {
    this.ops = ops;
    for (const op of ops) {
      const path = V3_BASE + op.path.replace(/\{([^}]+)\}/g, ':$1');
      this.tree.on(op.method as any, path, () => undefined, op);
      this.methods.add(op.method);
    }
  }

  find(method: string, path: string): Match | null {
    const found = this.tree.find(method as any, path);
    if (!found) return null;
    return { op: found.store as Operation, params: found.params };
  }

  /**
   * Whether the path names a catalogued route once its undecodable escapes (`%ff`, a lone `%`) are
   * set aside: such a path names a resource that cannot exist (404), not an unknown operation.
   */
  routesWithBadEscapes(path: string): boolean {
    const plain = path.replace(/%[0-9A-Fa-f]{2}|%/g, '_');
    return plain !== path && this.allowed(plain).length > 0;
  }

  /** Methods served at a path, for 405 and its Allow header. */
  allowed(path: string): string[] {
    return [...this.methods].filter((m) => this.tree.find(m as any, path) !== null);
  }

  /**
   * The operation a path that routes nowhere most plausibly meant (`/api/v3/user/1` ->
   * `GET /users/{user_id}`): templates with as many segments, a parameter matching any segment,
   * literals compared by edit distance; a typo of a third of the literal text at most, and an
   * operation of the same method before another.
   */
  nearest(method: string, path: string): Operation | undefined {
    // A typo is short; a long path (a probe, a fuzzer) is not worth the edit distances.
    if (!path.startsWith(V3_BASE + '/') || path.length > 200) return undefined;
    const segments = path.slice(V3_BASE.length + 1).split('/');
    let best: Operation | undefined;
    let bestCost = Infinity;
    for (const op of this.ops) {
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
      const ranked = cost + (op.method === method ? 0 : 0.5);
      if (ranked < bestCost) [best, bestCost] = [op, ranked];
    }
    return best;
  }
}
