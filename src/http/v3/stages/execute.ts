// Stage "execute": finds the operation's handler and binds it to the request, so that the
// idempotency stage (idempotent.ts) only decides in which transaction, if any, it runs.
import type { Context } from 'koa';
import type { Readable } from 'node:stream';
import type { Tx } from '../../../db/engine.ts';
import { AppError } from '../../../errors.ts';
import type { Locale } from '../../../i18n/messages.ts';
import type { AuthContext } from '../../../domain/credentials/auth.ts';
import type { Operation } from '../catalog.ts';
import type { HandlerContext, Handlers } from '../handlers/types.ts';
import type { Input } from './input.ts';

/** What the response stage renders: a JSON text (or nothing), or an event stream's messages. */
export interface Answer {
  status: number;
  body: string | undefined;
  headers: Record<string, string> | undefined;
  stream?: Readable;
}

/** What a handler returns, whatever the operation. */
export interface HandlerResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  stream?: Readable;
  /** False: the answer is shown once and never stored for a replay (a credential's secret). */
  replayable?: boolean;
}

/** The request's handler, ready to run in the given transaction (or in none). */
export type Execute = (tx: Tx | undefined) => Promise<HandlerResult>;

type AnyHandler = (c: HandlerContext<any>) => Promise<HandlerResult>;

export function executeStage(handlers: Handlers) {
  return function execute(
    ctx: Context,
    op: Operation,
    input: Input,
    auth: AuthContext,
    locale: Locale,
  ): Execute {
    const handler = handlers[op.id as keyof Handlers] as unknown as AnyHandler | undefined;
    if (!handler) throw new AppError('operation_not_catalogued');
    const base = {
      params: input.params,
      query: input.query,
      body: input.body,
      auth,
      requestId: ctx.state.requestId as string,
      locale,
      // Present but empty is not absent: it fails the precondition (a client whose ETag variable
      // was unset must not silently lose the lost-update guard).
      ifMatch: ctx.req.headers['if-match'],
      lastEventId: ctx.req.headersDistinct['last-event-id']?.[0],
    };
    return (tx) => handler({ ...base, tx });
  };
}
