// Handlers are typed by operationId from the generated types: a handler that returns a field the
// spec lacks, or a status the operation does not declare, fails `tsc`.
import type { Readable } from 'node:stream';
import type { operations } from '../../../../generated/types.ts';
import type { OperationId } from '../../../../generated/operations.ts';
import type { Tx } from '../../../db/knex.ts';
import type { AuthContext } from '../../../domain/credentials/auth.ts';
import type { Locale } from '../../../i18n/messages.ts';

type Op<K extends OperationId> = operations[K];
type Never<T> = [T] extends [never] ? Record<string, never> : NonNullable<T>;

export type PathOf<K extends OperationId> =
  Op<K> extends { parameters: { path?: infer P } } ? Never<P> : never;
export type QueryOf<K extends OperationId> =
  Op<K> extends { parameters: { query?: infer Q } } ? Never<Q> : never;
export type BodyOf<K extends OperationId> =
  NonNullable<Op<K>['requestBody']> extends { content: { 'application/json': infer B } }
    ? B
    : undefined;

type Responses<K extends OperationId> = Op<K>['responses'];
type SuccessStatus<K extends OperationId> = Extract<keyof Responses<K>, 200 | 201 | 202 | 204>;

export type Result<K extends OperationId> = {
  [S in SuccessStatus<K>]: Responses<K>[S] extends { content: { 'application/json': infer B } }
    ? { status: S; body: B; headers?: Record<string, string>; replayable?: false }
    : // No JSON body: nothing, or (an event-stream operation) the stream to send.
      { status: S; body?: undefined; headers?: Record<string, string>; stream?: Readable };
}[SuccessStatus<K>];

export interface HandlerContext<K extends OperationId> {
  params: PathOf<K>;
  query: QueryOf<K>;
  body: BodyOf<K>;
  auth: AuthContext;
  requestId: string;
  locale: Locale;
  /** Raw If-Match header, if any. */
  ifMatch: string | undefined;
  /** Raw Last-Event-ID header, if any (an EventSource resuming an event stream). */
  lastEventId: string | undefined;
  /** The transaction of an idempotent write: effects and the recorded result commit together. */
  tx: Tx | undefined;
}

export type Handler<K extends OperationId> = (c: HandlerContext<K>) => Promise<Result<K>>;
export type Handlers = { [K in OperationId]: Handler<K> };
