// Whether an answer keeps the contract, for the mock's proxy mode: the status is one the operation
// declares (`default` covers 500 only, as in the test suite's checker), the content type is one
// declared for it, and a JSON body matches its schema, checked by the real server's Ajv against
// the document itself. Routes outside the document may only answer errors in the envelope.
// Returns what is wrong, one readable line each; an empty list means the answer is on contract.
import type { ValidateFunction } from 'ajv';
import { OpenAPIRouter } from 'openapi-backend';
import { newAjv } from '../http/v3/catalog.ts';

type Obj = Record<string, any>;
/** The body was streamed through unread (an event stream): only status and type are checked. */
export const STREAMED = Symbol('streamed');

const esc = (p: string) => p.replace(/~/g, '~0').replace(/\//g, '~1');

export function conformance(spec: Obj, apiRoot: string) {
  const ajv = newAjv(false, spec);
  const router = new OpenAPIRouter({ definition: spec as any, apiRoot });
  const compiled = new Map<string, ValidateFunction>();
  const hasError = Boolean(spec.components?.schemas?.Error);

  /** A response object and the JSON pointer it lives at, through `$ref`s. */
  function resolve(node: Obj, pointer: string): { node: Obj; pointer: string } {
    let at = { node, pointer };
    for (let hops = 0; typeof at.node?.$ref === 'string' && hops < 10; hops++) {
      const ref: string = at.node.$ref;
      const parts = ref.replace(/^#\//, '').split('/');
      const decoded = parts.map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
      at = {
        node: decoded.reduce((acc: any, p) => acc?.[p], spec),
        pointer: `spec#/${parts.join('/')}`,
      };
    }
    return at;
  }

  function schemaErrors(pointer: string, body: unknown): string[] {
    let validate = compiled.get(pointer);
    if (!validate) compiled.set(pointer, (validate = ajv.compile({ $ref: pointer })));
    if (validate(body)) return [];
    return (validate.errors ?? [])
      .slice(0, 25)
      .map(
        (e) =>
          `body${e.instancePath || ''} ${e.message}${e.keyword === 'additionalProperties' ? ` (${(e.params as Obj).additionalProperty})` : ''}`,
      );
  }

  const envelope = (status: number, body: unknown): string[] => {
    if (status < 400) return [`${status} on a route the contract does not have`];
    return hasError && body !== undefined && body !== STREAMED
      ? schemaErrors('spec#/components/schemas/Error', body)
      : [];
  };

  return function violations(
    method: string,
    path: string,
    status: number,
    contentType: string | null,
    body: unknown,
  ): string[] {
    if (path !== apiRoot && !path.startsWith(apiRoot + '/')) return [];
    let op: Obj | undefined;
    try {
      op = router.matchOperation({ method, path, headers: {} } as any);
    } catch {
      op = undefined;
    }
    if (!op) return envelope(status, body);
    const key = op.responses?.[String(status)]
      ? String(status)
      : status === 500 && op.responses?.default
        ? 'default'
        : undefined;
    if (!key) {
      const declared = Object.keys(op.responses ?? {}).join(', ');
      return [
        `status ${status} is not declared by ${op.operationId} (${declared})`,
        ...envelope(Math.max(status, 400), body),
      ];
    }
    const base = `spec#/paths/${esc(op.path)}/${op.method}/responses/${key}`;
    const response = resolve(op.responses[key], base);
    const content: Obj | undefined = response.node?.content;
    if (!content) return body === undefined ? [] : [`${status} declares no body, one was sent`];
    const media = contentType?.split(';')[0]!.trim().toLowerCase();
    const types = Object.keys(content);
    if (body === undefined) return [`no body, the contract declares ${types.join(', ')}`];
    if (!media || !content[media])
      return [`content-type ${contentType ?? '(none)'} is not declared (${types.join(', ')})`];
    if (body === STREAMED || !/^application\/(.+\+)?json$/.test(media)) return [];
    if (typeof body === 'string') return ['body is not JSON'];
    return schemaErrors(`${response.pointer}/content/${esc(media)}/schema`, body);
  };
}
