// The operation catalog, built from the OpenAPI document at start-up: routes, permissions,
// idempotency rules, deprecations and compiled Ajv validators. Tests may pass a fixture document.
import Ajv2020Import, { type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { once, warmAll } from '../../domain/shared/once.ts';

const Ajv2020 = Ajv2020Import as unknown as typeof Ajv2020Import.default;
const addFormats = addFormatsImport as unknown as typeof addFormatsImport.default;

export type Idempotency = 'required' | 'accepted' | 'none';
/** What a request carries: nothing, or a JSON document (uploads will add raw bytes). */
export type BodyKind = 'none' | 'json';
/** What a success answers: a JSON document (or nothing), or a stream of Server-Sent Events. */
export type ResponseKind = 'json' | 'event-stream';

export interface Deprecation {
  deprecatedAt: string;
  sunsetAt: string;
}

export interface Operation {
  id: string;
  method: string;
  /** Path template relative to /api/v3, e.g. /users/{user_id}. */
  path: string;
  permissions: string[];
  idempotency: Idempotency;
  bodyKind: BodyKind;
  responseKind: ResponseKind;
  deprecation: Deprecation | null;
  /**
   * `x-outside-transaction`: the handler runs outside the request's transaction even with an
   * Idempotency-Key, its result recorded after it (long I/O, such as reading an uploaded file
   * back, must not hold SQLite's writer). Only for operations idempotent by nature.
   */
  outsideTransaction: boolean;
  queryNames: Set<string>;
  /** Header parameters it declares, lower-cased (e.g. x-client-request-id). */
  headerNames: Set<string>;
  validateQuery: ValidateFunction;
  validatePath: ValidateFunction;
  validateBody: ValidateFunction | null;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export function newAjv(coerce: boolean, spec: object) {
  const ajv = new Ajv2020({
    allErrors: true,
    strict: false,
    coerceTypes: coerce,
    useDefaults: false,
    validateFormats: true,
  });
  addFormats(ajv);
  // `format: email` means what the contract's Email schema says (`x-format-pattern`), nothing
  // looser or stricter.
  const email = (spec as any).components?.schemas?.Email?.['x-format-pattern'];
  if (typeof email === 'string') ajv.addFormat('email', new RegExp(email, 'i'));
  ajv.addSchema(spec, 'spec');
  return ajv;
}

const pointer = (...parts: string[]) =>
  'spec#/' + parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

function resolve(spec: any, node: any): any {
  let current = node;
  while (current && typeof current.$ref === 'string') {
    const parts = current.$ref.replace(/^#\//, '').split('/');
    current = parts.reduce(
      (acc: any, p: string) => acc?.[p.replace(/~1/g, '/').replace(/~0/g, '~')],
      spec,
    );
  }
  return current;
}

function paramSchema(spec: any, params: any[], location: 'query' | 'path') {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const raw of params) {
    const p = resolve(spec, raw);
    if (p.in !== location) continue;
    properties[p.name] = rewriteRefs(p.schema ?? {});
    if (p.required) required.push(p.name);
  }
  return { type: 'object', additionalProperties: false, properties, required };
}

/** Parameter schemas are copied out of the document, so their local refs must point into it. */
function rewriteRefs(schema: any): any {
  if (Array.isArray(schema)) return schema.map(rewriteRefs);
  if (!schema || typeof schema !== 'object') return schema;
  const out: any = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] =
      k === '$ref' && typeof v === 'string' && v.startsWith('#') ? 'spec' + v : rewriteRefs(v);
  }
  return out;
}

function responseKind(spec: any, op: any): ResponseKind {
  const success = Object.entries<any>(op.responses ?? {}).filter(([status]) => /^2/.test(status));
  const streams = success.some(([, r]) => resolve(spec, r)?.content?.['text/event-stream']);
  return streams ? 'event-stream' : 'json';
}

export function buildCatalog(spec: any): Operation[] {
  const strict = once(() => newAjv(false, spec));
  const coercing = once(() => newAjv(true, spec));
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<any>(spec.paths ?? {})) {
    for (const m of METHODS) {
      const op = item[m];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])];
      const query = paramSchema(spec, params, 'query');
      const method = m.toUpperCase();
      const entry = {
        id: op.operationId,
        method,
        path,
        permissions: op['x-permissions'] ?? [],
        idempotency: method === 'POST' ? 'required' : method === 'GET' ? 'none' : 'accepted',
        bodyKind: op.requestBody ? 'json' : 'none',
        responseKind: responseKind(spec, op),
        deprecation:
          op.deprecated && op['x-sunset']
            ? {
                deprecatedAt: String(op['x-service-deprecated-at']),
                sunsetAt: String(op['x-sunset']),
              }
            : null,
        outsideTransaction: op['x-outside-transaction'] === true,
        queryNames: new Set(Object.keys(query.properties)),
        headerNames: new Set(
          params
            .map((p) => resolve(spec, p))
            .filter((p) => p?.in === 'header')
            .map((p) => String(p.name).toLowerCase()),
        ),
      } as Operation;
      // Compiled on first use: a process (a test's app, a CLI) uses a few of the ~120 operations,
      // and compiling all of them was most of a start's CPU (warmCatalog compiles the rest).
      lazy(entry, 'validateQuery', () => coercing().compile(query));
      lazy(entry, 'validatePath', () => coercing().compile(paramSchema(spec, params, 'path')));
      lazy(entry, 'validateBody', () =>
        op.requestBody
          ? strict().compile({
              $ref: pointer(
                'paths',
                path,
                m,
                'requestBody',
                'content',
                'application/json',
                'schema',
              ),
            })
          : null,
      );
      ops.push(entry);
    }
  }
  return ops;
}

/** A property computed on first read and kept. */
function lazy<K extends keyof Operation>(op: Operation, key: K, make: () => Operation[K]) {
  Object.defineProperty(op, key, {
    configurable: true,
    enumerable: true,
    get() {
      const value = make();
      Object.defineProperty(op, key, { value, enumerable: true });
      return value;
    },
  });
}

/**
 * Compiles every operation's validators in the background, one operation per turn of the event
 * loop, so the server's first requests do not pay for it and a broken schema shows at start.
 */
export function warmCatalog(catalog: readonly Operation[]): Promise<void> {
  return warmAll(catalog.map((op) => () => [op.validateQuery, op.validatePath, op.validateBody]));
}
