// Prepares an OpenAPI 3.1 document for openapi-backend, which was built around 3.0:
// - `inlineRefs`: every local $ref replaced by its own copy of the target. openapi-backend
//   dereferences with shared objects and then "decycles" each schema by turning every object
//   seen twice into a $ref, arrays included; a `$ref` with siblings (legal in 3.1) copies the
//   target shallowly, so its `examples` or `required` array turned into `{ $ref }` and Ajv refused
//   the schema. Fresh copies leave only true cycles, which decycling handles.
// - `forMocking`: what its mock generator (mock-json-schema, a 3.0 tool) understands: the first
//   of a schema's 3.1 `examples` (else its `const`, else a sample of its `pattern`) as
//   `example`, no example on allOf members (it would stand for the whole), and
//   `type: [X, 'null']` as `type: X`.
import { samplePattern } from './pattern.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function target(doc: Obj, ref: string): unknown {
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObj(node) || !(key in node)) throw new Error(`unresolvable $ref "${ref}"`);
    node = node[key];
  }
  return node;
}

export function inlineRefs(doc: Obj): Obj {
  const expand = (node: unknown, stack: string[]): unknown => {
    if (Array.isArray(node)) return node.map((n) => expand(n, stack));
    if (!isObj(node)) return node;
    const ref = node.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/') && !stack.includes(ref)) {
      const { $ref: _ref, ...siblings } = node;
      const resolved = expand(target(doc, ref), [...stack, ref]);
      const own = expand(siblings, stack) as Obj;
      return isObj(resolved) ? { ...resolved, ...own } : resolved;
    }
    const out: Obj = {};
    for (const [k, v] of Object.entries(node)) out[k] = expand(v, stack);
    return out;
  };
  return expand(doc, []) as Obj;
}

/** A copy whose schemas mock-json-schema can turn into valid values. */
export function forMocking(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(forMocking);
  if (!isObj(node)) return node;
  const out: Obj = {};
  for (const [k, v] of Object.entries(node)) out[k] = forMocking(v);
  // A schema's `examples` is an array; a media type's is a map of Example objects: left alone.
  if (Array.isArray(node.examples) && node.examples.length && node.example === undefined) {
    out.example = node.examples[0];
  }
  if (out.example === undefined && node.const !== undefined) out.example = node.const;
  if (out.example === undefined && typeof node.pattern === 'string') {
    const sample = samplePattern(
      node.pattern,
      Number(node.minLength ?? 0),
      Number(node.maxLength ?? Infinity),
    );
    if (sample !== undefined) out.example = sample;
  }
  // A member's example describes the member, not the whole: allOf must merge the schemas.
  if (Array.isArray(out.allOf)) for (const m of out.allOf as Obj[]) delete m.example;
  // 3.1 bounds are numbers; mock-json-schema reads 3.0's booleans next to minimum/maximum.
  const step = node.type === 'integer' ? 1 : 0.5;
  if (typeof node.exclusiveMinimum === 'number') {
    out.minimum = Math.max(Number(node.minimum ?? -Infinity), node.exclusiveMinimum + step);
    delete out.exclusiveMinimum;
  }
  if (typeof node.exclusiveMaximum === 'number') {
    out.maximum = Math.min(Number(node.maximum ?? Infinity), node.exclusiveMaximum - step);
    delete out.exclusiveMaximum;
  }
  if (Array.isArray(node.type)) {
    const types = node.type.filter((t) => t !== 'null');
    out.type = types[0] ?? 'null';
  }
  return out;
}
