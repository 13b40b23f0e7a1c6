// Routes v3 requests with find-my-way (a radix tree): lookup cost grows with the path's length,
// not with the number of operations in the contract.
import FindMyWay from 'find-my-way';
import type { Operation } from './catalog.ts';

export const V3_BASE = '/api/v3';

export interface Match {
  op: Operation;
  params: Record<string, string | undefined>;
}

export class V3Router {
  private readonly tree = FindMyWay({ ignoreTrailingSlash: false, caseSensitive: true });
  private readonly methods = new Set<string>();

  constructor(ops: Operation[]) {
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

  /** Methods served at a path, for 405 and its Allow header. */
  allowed(path: string): string[] {
    return [...this.methods].filter((m) => this.tree.find(m as any, path) !== null);
  }
}
