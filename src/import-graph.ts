// The import graph of a source tree, and its cycles (strongly connected components of more than
// one node). test/unit/import-cycles.test.ts keeps the domain folders and files free of them.
import fs from 'node:fs';
import path from 'node:path';

export type Graph = Map<string, Set<string>>;

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** Relative imports and re-exports of a file (`import type` too: a type can close a circle). */
function imports(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const found = [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^;]*?from\s+'(\.[^']+)'/g)];
  return found.map((m) => path.resolve(path.dirname(file), m[1]!));
}

/**
 * The graph of `root`'s files (paths relative to it); `group` maps a path to its node (e.g. its
 * top folder), and edges inside one node are left out.
 */
export function importGraph(root: string, group: (rel: string) => string = (r) => r): Graph {
  const graph: Graph = new Map();
  for (const file of sources(root)) {
    const from = group(path.relative(root, file));
    if (!graph.has(from)) graph.set(from, new Set());
    for (const target of imports(file)) {
      const rel = path.relative(root, target);
      if (rel.startsWith('..')) continue;
      const to = group(rel);
      if (to !== from) graph.get(from)!.add(to);
    }
  }
  return graph;
}

/** Every cycle as its set of nodes, sorted (Tarjan's strongly connected components). */
export function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** `catalog/service.ts` -> `catalog`; a file at the root (`ratelimit.ts`) is its own node. */
export const topFolder = (rel: string): string => rel.split(path.sep)[0]!.replace(/\.ts$/, '');
