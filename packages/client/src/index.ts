// The School Platform API v3 client: openapi-fetch over the types generated from the contract
// (spec/openapi.yaml), so paths, parameters, bodies and answers are checked by `tsc`. On top:
// an Idempotency-Key on every state-changing call (reused by its retries), retries with backoff
// (retry.ts), `paginate` over cursor pages, and errors as ApiError (errors.ts). Autonomous mode
// sends the credential secret as a bearer token; human mode sends it as X-API-Key next to an
// administrator's access token, asked for before every request (tokens are refreshed).
//
//   const api = createClient({ baseUrl: 'http://127.0.0.1:3000', secret });
//   const { data, error } = await api.GET('/users/{user_id}', { params: { path: { user_id: '1' } } });
//   for await (const user of api.paginate('listUsers', { query: { limit: 100 } })) console.log(user.id);
import createFetchClient, { type Client } from 'openapi-fetch';
import { ApiError } from './errors.ts';
import { retrying, type RetryOptions } from './retry.ts';
import type { paths } from './types.ts';
// The contract's operationId table (generated); the build ships it as dist/operations.js.
import { listOperations, operations as operationTable } from '../../../generated/operations.ts';

export { ApiError, unwrap, type ErrorBody, type ErrorDetail } from './errors.ts';
export { retryAfterMs, type RetryOptions } from './retry.ts';
export type { components, operations, paths, webhooks } from './types.ts';

export interface ClientOptions extends RetryOptions {
  /** The server (`http://127.0.0.1:3000`); `/api/v3` is added unless it is there already. */
  baseUrl: string;
  /** The credential secret (`sch_live_…` or `sch_test_…`). */
  secret: string;
  /** Human mode: the administrator's access token, or a function giving a fresh one. */
  accessToken?: string | (() => string | Promise<string>);
  /** Accept-Language of error messages (en-US, pt-BR, es-ES, fr-FR). */
  locale?: string;
  /** Another fetch (tests, proxies); retries happen above it. */
  fetch?: (request: Request) => Promise<Response>;
}

type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type ListBody<P extends keyof paths> = paths[P] extends { get: { responses: { 200: infer R } } }
  ? JsonOf<R>
  : never;
/** The paths whose GET answers a cursor page (`{ data: [...], page: { next_cursor } }`). */
export type ListPath = {
  [P in keyof paths]: ListBody<P> extends { data: unknown[]; page: { next_cursor: unknown } }
    ? P
    : never;
}[keyof paths];
type Table = typeof operationTable;
/** The operationIds of those lists (`listUsers`): `paginate` takes one as well as a path. */
export type ListOperationId = {
  [K in keyof Table]: Table[K] extends { method: 'GET'; path: infer P }
    ? P extends ListPath
      ? K
      : never
    : never;
}[keyof Table];
/** The path of a list, named by its path or by its operationId. */
export type ListPathOf<T extends ListPath | ListOperationId> = T extends ListOperationId
  ? Extract<Table[T]['path'], ListPath>
  : Extract<T, ListPath>;
export type ListItem<P extends ListPath> = ListBody<P> extends { data: (infer T)[] } ? T : never;
type ListParams<P extends ListPath> = paths[P] extends { get: { parameters: infer Q } } ? Q : never;
export interface PageOptions<P extends ListPath> {
  /** Filters and `limit` (the page size); the cursor is the client's business. */
  query?: Omit<NonNullable<ListParams<P> extends { query?: infer Q } ? Q : never>, 'cursor'>;
  /** Path parameters, for nested lists (`/imports/{import_id}/rows`). */
  path?: ListParams<P> extends { path: infer T } ? T : never;
  signal?: AbortSignal;
}

// The client sets Idempotency-Key itself, so where the contract requires it, callers may omit it.
type KeyOptional<Op> = Op extends { parameters: { header: infer H } }
  ? H extends { 'Idempotency-Key': string }
    ? Omit<Op, 'parameters'> & {
        parameters: Omit<Op['parameters'], 'header'> &
          ({} extends Omit<H, 'Idempotency-Key'>
            ? { header?: Omit<H, 'Idempotency-Key'> & { 'Idempotency-Key'?: string } }
            : { header: Omit<H, 'Idempotency-Key'> & { 'Idempotency-Key'?: string } });
      }
    : Op
  : Op;
// Every answer that is not 2xx comes back as an ApiError (see createClient), so typed as one.
type ErrorsTyped<Op> = Op extends { responses: infer R }
  ? Omit<Op, 'responses'> & {
      responses: {
        [S in keyof R]: `${S & (string | number)}` extends `2${string}`
          ? R[S]
          : Omit<R[S], 'content'> & { content: { 'application/json': ApiError } };
      };
    }
  : Op;
/** The contract's paths as the client takes them: Idempotency-Key optional, errors ApiError. */
export type ClientPaths = {
  [P in keyof paths]: { [M in keyof paths[P]]: ErrorsTyped<KeyOptional<paths[P][M]>> };
};

export type V3Client = Client<ClientPaths> & {
  /** Every item of a list, page after page (`page.next_cursor`); an error is thrown as ApiError. */
  paginate<T extends ListPath | ListOperationId>(
    list: T,
    options?: PageOptions<ListPathOf<T>>,
  ): AsyncGenerator<ListItem<ListPathOf<T>>>;
};

/** The path of a list operation's operationId; anything else is the caller's mistake. */
function listPath(operationId: string): string {
  if (!(listOperations as readonly string[]).includes(operationId))
    throw new TypeError(`paginate: no list operation ${operationId}`);
  return (operationTable as Record<string, { path: string }>)[operationId]!.path;
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'] as const;

/** A fresh Idempotency-Key for one state-changing request (reuse it only to retry that request). */
export const idempotencyKey = (): string => globalThis.crypto.randomUUID();

export function createClient(options: ClientOptions): V3Client {
  const root = options.baseUrl.replace(/\/+$/, '').replace(/\/api\/v3$/, '');
  const transport = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createFetchClient<ClientPaths>({
    baseUrl: `${root}/api/v3`,
    headers: {
      accept: 'application/json',
      ...(options.locale ? { 'accept-language': options.locale } : {}),
    },
    fetch: retrying(transport, options),
  });
  client.use({
    async onRequest({ request }) {
      const { accessToken, secret } = options;
      if (accessToken === undefined) {
        request.headers.set('authorization', `Bearer ${secret}`);
      } else {
        const token = typeof accessToken === 'function' ? await accessToken() : accessToken;
        request.headers.set('x-api-key', secret);
        request.headers.set('authorization', `Bearer ${token}`);
      }
      // Set once per call, before the retries: every attempt carries the same key. Every
      // state-changing v3 operation declares Idempotency-Key (required on POST, optional else).
      if (STATE_CHANGING.has(request.method) && !request.headers.has('idempotency-key')) {
        request.headers.set('idempotency-key', idempotencyKey());
      }
      return request;
    },
  });
  // Errors as ApiError: the same fields as the envelope (`error.error.code` still works), and more.
  const call = (method: (typeof METHODS)[number] | 'request') => {
    const send = client[method] as (...args: unknown[]) => Promise<any>;
    return async (...args: unknown[]) => {
      const result = await send(...args);
      if (result.error !== undefined) result.error = ApiError.from(result.response, result.error);
      return result;
    };
  };
  const typed = client as V3Client;
  for (const method of [...METHODS, 'request'] as const)
    Object.assign(typed, { [method]: call(method) });
  typed.paginate = async function* (list, pageOptions = {}) {
    const path = list.startsWith('/') ? list : listPath(list);
    let cursor: string | null | undefined;
    do {
      const query = { ...pageOptions.query, ...(cursor ? { cursor } : {}) };
      const params = { query, ...(pageOptions.path ? { path: pageOptions.path } : {}) };
      const get = typed.GET as (p: string, init: object) => Promise<any>;
      const { data, error } = await get(path, { params, signal: pageOptions.signal });
      if (error !== undefined) throw error;
      yield* data.data;
      cursor = data.page.next_cursor;
    } while (cursor);
  };
  return typed;
}
