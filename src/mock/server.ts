// A mock of the v3 API built from the contract alone, with openapi-backend: every operation of
// the document is served from its examples (or a value generated from its response schema),
// after the request is checked against the document the way the real server checks it, and
// errors use the same envelope. No handler is written per operation: every operation reaches
// openapi-backend's `notImplemented` handler, which mocks it. Stateless: nothing is stored.
import http from 'node:http';
import { OpenAPIBackend, type Context, type Request } from 'openapi-backend';
import type { ErrorObject } from 'ajv';
import { AppError, isAppError } from '../errors.ts';
import { detailMessage, errorMessage, negotiateLocale, type Locale } from '../i18n/messages.ts';
import { ClientClosedRequest, isJsonRequest, parseJson, readBody } from '../http/body.ts';
import { newRequestId } from '../domain/shared/ids.ts';
import { newAjv } from '../http/v3/catalog.ts';
import { refuseBody } from '../http/v3/validation.ts';
import { forMocking, inlineRefs } from './document.ts';
import { validationError } from './errors.ts';
import { errorAnswer } from './error-examples.ts';
import { generatedPage, isList, loadGenerator } from './lists.ts';
import { listen } from '../http/listen.ts';
import { nearestRoute, unknownRoute } from '../http/v3/nearest-route.ts';

export const MOCK_BASE = '/api/v3';
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const SECRET = /^sch_(live|test)_\S+$/;

interface Answer {
  status: number;
  body?: unknown;
  type?: string;
  headers?: Record<string, string>;
}

function backend(definition: object, spec: any, validate: boolean) {
  // The real server's Ajv (2020-12, its formats and email rule), one per coercion setting:
  // openapi-backend asks for a new instance for every operation it compiles.
  const ajvs = new Map<boolean, ReturnType<typeof newAjv>>();
  const ajvFor = (coerce: boolean) => {
    if (!ajvs.has(coerce)) ajvs.set(coerce, newAjv(coerce, spec));
    return ajvs.get(coerce)!;
  };
  return new OpenAPIBackend({
    definition: definition as any,
    apiRoot: MOCK_BASE,
    strict: true,
    // Validators compile on an operation's first request: all of them up front took 3 to 9 s on
    // the whole contract. Quick mode also skips openapi-backend's definition check, which uses
    // the OpenAPI 3.0 meta-schema and refuses every 3.1 document (Redocly lints ours).
    quick: true,
    validate,
    ignoreTrailingSlashes: false,
    // OpenAPI 3.1 schemas are JSON Schema 2020-12; openapi-backend's default Ajv is draft-07.
    customizeAjv: (_default, options) => ajvFor(options.coerceTypes === true) as any,
  });
}

/** Authentication by shape only: a credential secret, or human mode's key and token. */
const OUR_SCHEMES: Record<string, (c: Context) => boolean> = {
  credential: (c) => SECRET.test(bearer(c) ?? ''),
  humanApiKey: (c) => SECRET.test(String(c.request.headers['x-api-key'] ?? '')),
  humanAccessToken: (c) => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(bearer(c) ?? ''),
};
function bearer(c: Context): string | undefined {
  return /^Bearer (\S+)$/.exec(String(c.request.headers.authorization ?? ''))?.[1];
}
/** Another document's schemes: present is enough. */
function anyScheme(scheme: any): (c: Context) => boolean {
  if (scheme?.type === 'apiKey' && scheme.in === 'header')
    return (c) => Boolean(c.request.headers[String(scheme.name).toLowerCase()]);
  if (scheme?.type === 'http' && scheme.scheme === 'bearer') return (c) => bearer(c) !== undefined;
  return () => false;
}

/** `Prefer: code=404, example=empty` (as Prism reads it); a code that is not 3 digits is NaN. */
function prefer(header: string | undefined): { code?: number; example?: string } {
  const out: { code?: number; example?: string } = {};
  for (const part of (header ?? '').split(/[,;]/)) {
    const [k, v] = part.split('=').map((s) => s.trim());
    if (k === 'code') out.code = /^\d{3}$/.test(v ?? '') ? Number(v) : NaN;
    if (k === 'example' && v) out.example = v;
  }
  return out;
}

/** 422 for a `Prefer: code=` the operation does not declare: never a silent 2xx. */
function undeclared(declared: string[], locale: Locale): AppError {
  const values = [...new Set(declared)].sort().join(', ');
  const message = detailMessage('invalid_value', locale, { values });
  return new AppError('validation_failed', {
    details: [{ parameter: 'Prefer', code: 'invalid_value', message }],
  });
}

/** The page size asked for (already validated), else the parameter's default. */
function limitOf(op: any, url: URL): number {
  const asked = Number(url.searchParams.get('limit') ?? NaN);
  if (Number.isInteger(asked) && asked > 0) return asked;
  const param = (op.parameters ?? []).find((p: any) => p.name === 'limit' && p.in === 'query');
  return Number(param?.schema?.default ?? 3);
}

function decodable(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

export async function createMock(spec: any) {
  if (!/^3\.1\./.test(String(spec?.openapi)))
    throw new Error('the mock serves OpenAPI 3.1 documents');
  const inlined = inlineRefs(spec);
  const api = backend(inlined, spec, true);
  const mocker = backend(forMocking(inlined) as object, spec, false);
  await Promise.all([api.init(), mocker.init(), loadGenerator()]);

  const error = (err: AppError): Answer => ({
    status: err.status,
    headers: err.headers,
    body: err,
  });

  function mock(c: Context, preferred: string | undefined, locale: Locale, url: URL): Answer {
    const op = c.operation;
    const statuses = Object.keys(op.responses ?? {});
    const wanted = prefer(preferred);
    const success = statuses.filter((s) => /^2\d\d$/.test(s)).sort()[0];
    let code = Number(success ?? 200);
    if (wanted.code !== undefined) {
      // `default` stands for 500 only: the contract lists every other status an operation answers.
      const declared = statuses.map((s) => (s === 'default' ? '500' : s));
      if (!declared.includes(String(wanted.code))) return error(undeclared(declared, locale));
      code = wanted.code;
    }
    if (code >= 400) {
      const answer = errorAnswer(op, code, wanted.example);
      if ('error' in answer) return error(answer.error);
      return { status: code, body: structuredClone(answer.example), type: 'application/json' };
    }
    const media = (op.responses?.[String(code)] as any)?.content?.['application/json'];
    const page =
      isList(media?.schema) && media.example === undefined && !media.examples
        ? generatedPage(media.schema, `${c.request.method} ${url.pathname}`, limitOf(op, url))
        : undefined;
    if (page) return { status: code, body: page, type: 'application/json' };
    const { status, mock: value } = mocker.mockResponseForOperation(op.operationId!, {
      code,
      example: wanted.example,
    });
    const response: any = op.responses?.[String(status)];
    if (status === 204 || !response?.content) return { status };
    const type = response.content['application/json']
      ? 'application/json'
      : Object.keys(response.content)[0];
    return { status, body: structuredClone(value), type };
  }

  const routes = () => api.getOperations().map((o) => ({ method: o.method, path: o.path }));
  api.register({
    notImplemented: (c: Context, preferred: string | undefined, locale: Locale, url: URL) =>
      mock(c, preferred, locale, url),
    validationFail: (c: Context, _p: unknown, locale: Locale) =>
      error(validationError((c.validation.errors ?? []) as ErrorObject[], locale)),
    unauthorizedHandler: () => error(new AppError('unauthenticated')),
    // As on the server: a path outside the contract is 404, naming the operation it resembles.
    notFound: (c: Context) =>
      error(
        new AppError('not_found', {
          details: [
            unknownRoute(
              MOCK_BASE,
              nearestRoute(routes(), c.request.method, MOCK_BASE, c.request.path),
            ),
          ],
        }),
      ),
    methodNotAllowed: (c: Context) => {
      const path = c.request.path;
      const allow = METHODS.filter((method) =>
        api.router.matchOperation({ method, path, headers: {} }),
      );
      return error(new AppError('method_not_allowed', { headers: { Allow: allow.join(', ') } }));
    },
  });
  for (const [name, scheme] of Object.entries<any>(spec.components?.securitySchemes ?? {})) {
    api.registerSecurityHandler(name, OUR_SCHEMES[name] ?? anyScheme(scheme));
  }

  async function answer(req: http.IncomingMessage, url: URL, locale: Locale): Promise<Answer> {
    if (url.pathname !== MOCK_BASE && !url.pathname.startsWith(MOCK_BASE + '/'))
      return error(new AppError('not_found'));
    const op = api.router.matchOperation({ method: req.method!, path: url.pathname, headers: {} });
    // The real server: a path value that does not decode (`/users/%ff`) names nothing.
    if (op && !decodable(url.pathname)) throw new AppError('not_found');
    const raw = await readBody(req);
    const isJson = isJsonRequest(req);
    if ((raw.length > 0 || op?.requestBody) && !isJson)
      throw new AppError('unsupported_media_type');
    let body = parseJson(raw);
    if (op && !op.requestBody) refuseBody(body);
    if (op?.requestBody && body === undefined) body = null; // validated like the server: "must be object"
    const request: Request = {
      method: req.method!,
      path: url.pathname,
      query: url.search.slice(1),
      headers: req.headers as Request['headers'],
      body,
    };
    return api.handleRequest(request, req.headers.prefer, locale, url);
  }

  const server = http.createServer(async (req, res) => {
    const requestId = newRequestId();
    const locale = negotiateLocale(req.headers['accept-language']);
    const url = new URL(req.url ?? '/', 'http://mock');
    let out: Answer;
    try {
      out = await answer(req, url, locale);
    } catch (err) {
      // A client that hung up mid-body: nobody to answer, and not the mock's fault.
      if (err instanceof ClientClosedRequest) return void res.destroy();
      if (!isAppError(err)) console.error(err); // the mock's own fault: say what it was
      out = error(isAppError(err) ? err : new AppError('internal_error'));
    }
    let text: string | undefined;
    if (out.body instanceof AppError) {
      const e = out.body;
      const envelope = {
        code: e.code,
        message: errorMessage(e.code, locale, e.params),
        request_id: requestId,
      };
      text = JSON.stringify({ error: { ...envelope, details: e.details, ...e.extra } });
    } else if (out.body !== undefined) {
      const value = out.body as any;
      // An error example names some request; this response names its own.
      if (typeof value?.error?.request_id === 'string') value.error.request_id = requestId;
      text =
        typeof value === 'string' && out.type !== 'application/json'
          ? value
          : JSON.stringify(value);
    }
    res.writeHead(out.status, {
      'X-Request-Id': requestId,
      'X-Service-Release': String(spec.info?.version ?? ''),
      ...(text === undefined ? {} : { 'Content-Type': out.type ?? 'application/json' }),
      ...out.headers,
    });
    res.end(text);
  });

  return {
    server,
    operations: api.getOperations().length,
    release: String(spec.info?.version ?? ''),
    async listen(port: number, host = '127.0.0.1'): Promise<number> {
      await listen(server, port, host);
      return (server.address() as { port: number }).port;
    },
    async close(): Promise<void> {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    },
  };
}
