// The rule that every v3 operation declares every status it can answer, derived from what the
// operation is, so an operation added tomorrow is held to it without anyone remembering:
//   every operation        400 (unknown query parameter; an unreadable body sent anyway), 406
//                          (Accept), 413, 415, 422 (a body sent to it is read and refused or
//                          checked), 429 (rate limits), 503 (limiter, audit or credential state
//                          unavailable); 401 and 403 (credential, account state, permission)
//                          unless it takes no authentication;
//   a path parameter       404;
//   If-Match               412;
//   Idempotency-Key        409 (a repeat in progress, an uncertain result) and 422;
//   x-sunset               410 (after the sunset date);
//   THROWS below           what its handlers and services throw beyond these.
// `default` stays, for 500 only. `npm run check` fails naming each missing operation and status;
// `npm run statuses -- --fix` writes them into spec/openapi.yaml as shared components/responses.
import YAML, { isMap, isScalar, type Pair, type YAMLMap } from 'yaml';

export const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** The shared response (components/responses) each status is declared with. */
export const SHARED_RESPONSE: Record<string, string> = {
  '400': 'BadRequest',
  '401': 'Unauthorized',
  '403': 'Forbidden',
  '404': 'NotFound',
  '406': 'NotAcceptable',
  '409': 'Conflict',
  '410': 'Gone',
  '412': 'PreconditionFailed',
  '413': 'PayloadTooLarge',
  '415': 'UnsupportedMediaType',
  '422': 'Unprocessable',
  '429': 'TooManyRequests',
  '503': 'ServiceUnavailable',
};

/**
 * Statuses an operation's handlers and services throw that its shape does not imply (a business
 * rule's 409, a cursor's 410, a lookup's 404 without a path parameter). Keep it beside the code
 * that throws: a new throw of a new status goes here, and the check then asks the contract for it.
 */
export const THROWS: Record<string, string[]> = {
  createUser: ['409'],
  updateUser: ['409'],
  createTag: ['409'],
  updateTag: ['409'],
  deleteTag: ['409'],
  createWebhook: ['409'],
  createEventStream: ['409'],
  streamEvents: ['409', '410'],
  createProduct: ['409'],
  updateProduct: ['409'],
  createDelivery: ['409'],
  updateDelivery: ['409'],
  createEnrollment: ['409'],
};

export interface Missing {
  operationId: string;
  method: string;
  path: string;
  status: string;
  why: string;
}

const resolve = (doc: any, node: any): any => {
  if (!node?.$ref) return node;
  const parts = String(node.$ref).replace(/^#\//, '').split('/');
  return resolve(
    doc,
    parts.reduce((acc: any, p: string) => acc?.[p.replace(/~1/g, '/').replace(/~0/g, '~')], doc),
  );
};

/** Each status the operation must declare, with why. */
export function requiredStatuses(doc: any, path: string, method: string): Map<string, string> {
  const item = doc.paths[path];
  const op = item[method];
  const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => resolve(doc, p));
  const has = (where: string, name?: string) =>
    params.some((p) => p?.in === where && (!name || p.name.toLowerCase() === name));
  const out = new Map<string, string>();
  const need = (status: string, why: string) => {
    if (!out.has(status)) out.set(status, why);
  };
  need('400', 'every operation refuses unknown query parameters and unreadable bodies');
  const security = op.security ?? doc.security ?? [];
  const open = security.length === 0 || security.some((s: object) => !Object.keys(s).length);
  if (!open) {
    need('401', 'it takes a credential or access token');
    need('403', 'permissions and the account state are checked');
  }
  need('406', 'the Accept header is negotiated');
  need('413', 'a body is read up to 1 MiB');
  need('415', 'a body must be application/json');
  need('422', 'a body or query parameter is checked');
  need('429', 'every operation is rate limited');
  need('503', 'the rate limiter, audit trail or credential state may be unavailable');
  if (has('path')) need('404', 'it names a resource in its path');
  if (has('header', 'if-match')) need('412', 'it takes If-Match');
  if (has('header', 'idempotency-key')) {
    need('409', 'it takes an Idempotency-Key (a repeat in progress, an uncertain result)');
    need('422', 'it takes an Idempotency-Key');
  }
  if (op['x-sunset']) need('410', 'it has a sunset date');
  for (const status of THROWS[op.operationId] ?? []) need(status, 'its handler throws it');
  return out;
}

/** Every status some operation does not declare, and every operation without `default`. */
export function missingStatuses(doc: any): Missing[] {
  const missing: Missing[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const declared = op.responses ?? {};
      const wanted = requiredStatuses(doc, path, method);
      wanted.set('default', 'an unexpected failure (500)');
      for (const [status, why] of wanted) {
        if (!(status in declared))
          missing.push({ operationId: op.operationId, method, path, status, why });
      }
    }
  }
  return missing;
}

const order = (status: string) => (status === 'default' ? 1000 : Number(status));

/**
 * spec/openapi.yaml with the missing statuses written in, each a one-line reference to its shared
 * response, in status order. Lines are inserted into the text, so the rest of the file (comments,
 * layout) is untouched and parallel edits of other operations merge cleanly.
 */
export function fixStatuses(text: string): { text: string; added: Missing[] } {
  const doc = YAML.parse(text);
  const missing = missingStatuses(doc).filter((m) => m.status !== 'default');
  const tree = YAML.parseDocument(text);
  const inserts: { at: number; status: string; line: string }[] = [];
  for (const m of missing) {
    const responses = tree.getIn(['paths', m.path, m.method, 'responses'], true);
    if (!isMap(responses)) throw new Error(`${m.operationId}: no responses map`);
    const pairs = (responses as YAMLMap).items as Pair[];
    const next = pairs.find((p) => isScalar(p.key) && order(String(p.key.value)) > order(m.status));
    const key = (next ?? pairs[pairs.length - 1])!.key as { range: [number, number, number] };
    const lineStart = text.lastIndexOf('\n', key.range[0]) + 1;
    const indent = text.slice(lineStart, key.range[0]);
    let at = lineStart;
    if (!next) {
      // After the last pair: past the end of its value's last line.
      const end = (pairs[pairs.length - 1]!.value as { range: [number, number, number] }).range[2];
      at = text.indexOf('\n', end - 1) + 1 || text.length;
    }
    const ref = `'#/components/responses/${SHARED_RESPONSE[m.status]}'`;
    inserts.push({ at, status: m.status, line: `${indent}'${m.status}': { $ref: ${ref} }\n` });
  }
  // From the end backwards, so earlier offsets stay valid; same place keeps status order.
  inserts.sort((a, b) => b.at - a.at);
  let out = text;
  for (let i = 0; i < inserts.length;) {
    const at = inserts[i]!.at;
    const group: typeof inserts = [];
    while (i < inserts.length && inserts[i]!.at === at) group.push(inserts[i++]!);
    group.sort((a, b) => order(a.status) - order(b.status));
    out = out.slice(0, at) + group.map((g) => g.line).join('') + out.slice(at);
  }
  return { text: out, added: missing };
}
