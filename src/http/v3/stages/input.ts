// Stage "input": what the caller may do and what it sent. The permission, the Accept header for
// the operation's response kind, path and query parameters, the Idempotency-Key, and the body of
// the operation's body kind, each checked against the contract. A validation failure executes
// nothing and does not use up the Idempotency-Key.
import type { Context } from 'koa';
import { AppError } from '../../../errors.ts';
import { detailMessage, type Locale } from '../../../i18n/messages.ts';
import { hasPermission, type AuthContext } from '../../../domain/credentials/auth.ts';
import { KEY_PATTERN } from '../../../domain/idempotency/service.ts';
import { isJsonRequest, parseJson, readBody } from '../../body.ts';
import type { Operation } from '../catalog.ts';
import { check, hasNul, refuseBody, rejectNul } from '../validation.ts';

export interface Input {
  params: Record<string, string | undefined>;
  query: Record<string, unknown>;
  body: unknown;
  /** The Idempotency-Key, when the operation takes one and the caller sent it. */
  key: string | undefined;
}

export function authorize(op: Operation, auth: AuthContext): void {
  const missing = op.permissions.filter((p) => !hasPermission(auth.credential.permissions, p));
  if (missing.length) {
    throw new AppError('permission_denied', {
      details: missing.map((p) => ({ code: 'missing_permission', message: p, reason: p })),
    });
  }
}

const MEDIA = { json: 'application/json', 'event-stream': 'text/event-stream' } as const;

export function negotiate(ctx: Context, op: Operation): void {
  const accept = ctx.get('accept');
  const media = MEDIA[op.responseKind];
  // The common values need no parsing (negotiator costs a few percent of a small GET).
  const plain = accept === '' || accept === '*/*' || accept === media;
  if (!plain && !ctx.accepts(media)) throw new AppError('not_acceptable');
}

export async function readInput(
  ctx: Context,
  op: Operation,
  matched: Record<string, string | undefined>,
  locale: Locale,
): Promise<Input> {
  const params = { ...matched };
  if (!op.validatePath(params) || Object.values(params).some(hasNul))
    throw new AppError('not_found');
  const query = { ...ctx.query } as Record<string, unknown>;
  check(op.validateQuery, query, 'parameter', locale);
  rejectNul(query, 'parameter', locale);
  if (op.headerNames.has('x-client-request-id')) echoClientRequestId(ctx, locale);
  // Last-Event-ID names one position: sent twice it is ambiguous, refused rather than one picked.
  if (
    (ctx.req.headersDistinct['last-event-id']?.length ?? 0) > 1 &&
    op.headerNames.has('last-event-id')
  )
    throw new AppError('validation_failed', {
      details: [
        {
          parameter: 'Last-Event-ID',
          code: 'invalid',
          message: detailMessage('invalid', locale, {}),
        },
      ],
    });

  const keys = ctx.req.headersDistinct['idempotency-key'];
  // Reads are naturally idempotent: a key sent with a GET is ignored.
  const key = op.idempotency === 'none' ? undefined : keys?.[0];
  if (op.idempotency === 'required' && key === undefined)
    throw new AppError('idempotency_key_required');
  if (key !== undefined && (keys!.length > 1 || !KEY_PATTERN.test(key)))
    throw new AppError('idempotency_key_invalid');

  return { params, query, key, body: await readJsonBody(ctx, op, locale) };
}

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The caller's own request id: checked, echoed in the response and logged (common.ts), beside
 * X-Request-Id, which stays ours.
 */
function echoClientRequestId(ctx: Context, locale: Locale): void {
  const values = ctx.req.headersDistinct['x-client-request-id'];
  if (!values) return;
  if (values.length > 1 || !CLIENT_REQUEST_ID.test(values[0]!)) {
    const format = 'at most 64 letters, digits, ".", "_", "-"';
    throw new AppError('validation_failed', {
      details: [
        {
          parameter: 'X-Client-Request-Id',
          code: 'invalid_format',
          message: detailMessage('invalid_format', locale, { format }),
        },
      ],
    });
  }
  ctx.set('X-Client-Request-Id', values[0]!);
  ctx.state.clientRequestId = values[0];
}

async function readJsonBody(ctx: Context, op: Operation, locale: Locale): Promise<unknown> {
  const hasContent =
    Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
  // Read the header itself: ctx.is() answers null for an empty body.
  const isJson = isJsonRequest(ctx.req);
  if ((op.bodyKind === 'json' || hasContent) && !isJson)
    throw new AppError('unsupported_media_type');
  // HTTP/1.1 framing: no Content-Length and no Transfer-Encoding means no body, so a GET does not
  // wait an event-loop turn for the end of a stream that carries nothing.
  const raw = hasContent ? await readBody(ctx.req) : undefined;
  const body = raw ? parseJson(raw) : undefined;
  if (op.validateBody) {
    check(op.validateBody, body === undefined ? null : body, 'field', locale);
    // JSON can only carry U+0000 escaped; the walk runs only for a body that has the escape.
    if (raw?.includes('\\u0000')) rejectNul(body, 'field', locale);
    return body;
  }
  refuseBody(body);
  return undefined;
}
