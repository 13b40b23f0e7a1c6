// engine: any
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cycles, importGraph, topFolder, type Graph } from '../../src/import-graph.ts';

test('cycles: finds a circle of folders and ignores a chain', () => {
  const g: Graph = new Map([
    ['a', new Set(['b'])],
    ['b', new Set(['c'])],
    ['c', new Set(['a', 'd'])],
    ['d', new Set<string>()],
  ]);
  assert.equal(cycles(g), [['a', 'b', 'c']]);
  g.get('c')!.delete('a');
  assert.equal(cycles(g), []);
});

test('the folders of src/domain import each other without a cycle', () => {
  const graph = importGraph('src/domain', topFolder);
  // The graph is real: sales depends on the catalog and enrollments on the outbox.
  assert.ok(graph.get('sales')!.has('catalog'));
  assert.ok(graph.get('enrollments')!.has('outbox'));
  assert.equal(cycles(graph), []);
});

test('the files of src/domain import each other without a cycle', () => {
  const graph = importGraph('src/domain');
  assert.ok(graph.get('enrollments/service.ts')!.has('enrollments/resolve.ts'));
  assert.equal(cycles(graph), []);
});

test.run();
