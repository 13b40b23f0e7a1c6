// Routes v3 requests with find-my-way (a radix tree): lookup cost grows with the path's length,
// not with the number of operations in the contract.
import FindMyWay from 'find-my-way';
import { nearestRoute } from './nearest-route.ts';
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

  /** The operation a path that routes nowhere most plausibly meant (see nearest-route.ts). */
  nearest(method: string, path: string): Operation | undefined {
    return nearestRoute(this.ops, method, V3_BASE, path);
  }
}
