// Whether a request keeps the contract, for the mock's proxy mode: the checks the mock itself makes
// before it answers (openapi-backend's validator over the document, with the real server's Ajv),
// read as lines like the answer's (`request query/limit must be <= 100`). Only requests that name
// an operation are checked: an unknown route or method is answered by the server (404, 405) on
// contract, and authentication is the server's to judge (401), so neither is reported here.
import type { ErrorObject } from 'ajv';
import { OpenAPIRouter, OpenAPIValidator, type Request } from 'openapi-backend';
import { newAjv } from '../http/v3/catalog.ts';
import { inlineRefs } from './document.ts';

type Obj = Record<string, any>;
const PLACES: Record<string, string> = { requestBody: 'body', query: 'query', header: 'header' };

/** One readable line of an Ajv error, named by the part of the request it is about. */
function line(e: ErrorObject): string {
  const m = /^\/(path|query|header|requestBody)(\/.*)?$/.exec(e.instancePath);
  const missing = (e.params as { missingProperty?: string }).missingProperty;
  if (!m && e.keyword === 'required' && missing && missing in PLACES)
    return `request ${PLACES[missing]} is required`;
  const where = m ? ` ${PLACES[m[1]!] ?? m[1]}${m[2] ?? ''}` : '';
  const extra =
    e.keyword === 'additionalProperties' ? ` (${(e.params as Obj).additionalProperty})` : '';
  return `request${where} ${e.message}${extra}`;
}

export function requestConformance(spec: Obj, apiRoot: string) {
  const definition = inlineRefs(spec) as any;
  const router = new OpenAPIRouter({ definition, apiRoot });
  const ajvs = new Map<boolean, ReturnType<typeof newAjv>>();
  const validator = new OpenAPIValidator({
    definition,
    router,
    lazyCompileValidators: true,
    coerceTypes: true,
    customizeAjv: (_default, options) => {
      const coerce = options.coerceTypes === true;
      if (!ajvs.has(coerce)) ajvs.set(coerce, newAjv(coerce, spec));
      return ajvs.get(coerce)! as any;
    },
  });

  return function violations(
    method: string,
    url: URL,
    headers: Record<string, string | string[] | undefined>,
    raw: Buffer,
  ): string[] {
    let op: Obj | undefined;
    try {
      op = router.matchOperation({ method, path: url.pathname, headers: {} } as any);
    } catch {
      op = undefined;
    }
    if (!op) return [];
    const type = String(headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    const declared = Object.keys(op.requestBody?.content ?? {});
    let body: unknown;
    if (raw.length > 0) {
      if (!op.requestBody) return [`request body sent, ${op.operationId} takes none`];
      if (!declared.includes(type))
        return [
          `request content-type ${type || '(none)'} is not declared (${declared.join(', ')})`,
        ];
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return ['request body is not JSON'];
      }
    }
    const request: Request = {
      method,
      path: url.pathname,
      query: url.search.slice(1),
      headers: headers as Request['headers'],
      body,
    };
    const result = validator.validateRequest(request, op.operationId);
    return (result.errors ?? []).slice(0, 25).map((e) => line(e as ErrorObject));
  };
}
