// A typed v3 client: openapi-fetch over the types generated from the contract, so paths,
// parameters, bodies and answers are checked by `tsc` against spec/openapi.yaml. Autonomous mode
// sends the credential secret as a bearer token; human mode sends it as X-API-Key next to an
// administrator's access token, asked for before every request (tokens are refreshed).
//
//   const api = createClient({ baseUrl: 'http://127.0.0.1:3000', secret });
//   const { data, error } = await api.GET('/users/{user_id}', { params: { path: { user_id: '1' } } });
import crypto from 'node:crypto';
import createFetchClient, { type Client } from 'openapi-fetch';
import type { components, paths } from '../../generated/types.ts';

export type V3Client = Client<paths>;
/** The body of every v3 error: `error.code` is what integrations branch on. */
export type ApiError = components['schemas']['Error'];

export interface ClientOptions {
  /** The server (`http://127.0.0.1:3000`); `/api/v3` is added unless it is there already. */
  baseUrl: string;
  /** The credential secret (`sch_live_…` or `sch_test_…`). */
  secret: string;
  /** Human mode: the administrator's access token, or a function giving a fresh one. */
  accessToken?: string | (() => string | Promise<string>);
  /** Accept-Language of error messages (en-US, pt-BR, es-ES, fr-FR). */
  locale?: string;
  /** Another fetch (tests, proxies). */
  fetch?: (request: Request) => Promise<Response>;
}

export function createClient(options: ClientOptions): V3Client {
  const root = options.baseUrl.replace(/\/+$/, '').replace(/\/api\/v3$/, '');
  const client = createFetchClient<paths>({
    baseUrl: `${root}/api/v3`,
    headers: {
      accept: 'application/json',
      ...(options.locale ? { 'accept-language': options.locale } : {}),
    },
    ...(options.fetch ? { fetch: options.fetch } : {}),
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
      return request;
    },
  });
  return client;
}

/** A fresh Idempotency-Key for one state-changing request (reuse it only to retry that request). */
export const idempotencyKey = (): string => crypto.randomUUID();
