// The v3 request pipeline. Order: source limit -> route -> deprecation -> authentication ->
// account/credential limits -> permission -> Accept -> parameters -> Idempotency-Key -> body ->
// idempotency reservation -> handler (in one transaction with the recorded result) -> audit.
// Every failure is an AppError rendered once, in the specification's envelope.
import type { Context, Middleware } from 'koa';
import type { Db } from '../../db/knex.ts';
import { transaction } from '../../db/tx.ts';
import type { Clock } from '../../clock.ts';
import { AppError } from '../../errors.ts';
import { negotiateLocale, type Locale } from '../../i18n/messages.ts';
import { hasPermission, type AuthContext } from '../../domain/auth.ts';
import type { AuditService } from '../../domain/audit/repo.ts';
import type { CredentialsService } from '../../domain/credentials/service.ts';
import {
  KEY_PATTERN,
  requestHash,
  type IdempotencyService,
} from '../../domain/idempotency/service.ts';
import type { RateLimits, LimitState, LimitKind } from '../../domain/ratelimit.ts';
import type { Handlers, HandlerContext } from './handlers/types.ts';
import { ClientClosedRequest, parseJson, readBody } from '../body.ts';
import { authenticate, type HumanVerifier } from './authenticate.ts';
import type { Operation } from './catalog.ts';
import { renderError, renderJson, toAppError } from './render.ts';
import { V3Router, V3_BASE } from './router.ts';
import { check, hasNul, rejectNul } from './validation.ts';

export interface PipelineDeps {
  db: Db;
  clock: Clock;
  catalog: Operation[];
  handlers: Handlers;
  release: string;
  publicBaseUrl: string;
  services: {
    credentials: CredentialsService;
    idempotency: IdempotencyService;
    rateLimits: RateLimits;
    audit: AuditService;
    human: HumanVerifier | null;
  };
  onError: (err: unknown, ctx: Context) => void;
}

interface Trace {
  op?: Operation;
  auth?: AuthContext;
}

/** Errors that mean "nothing was done": the Idempotency-Key is not consumed. */
const NOT_CONSUMING = new Set(['validation_failed', 'unknown_field', 'unknown_parameter']);

export function v3Pipeline(deps: PipelineDeps): Middleware {
  const router = new V3Router(deps.catalog);
  const { services } = deps;

  function deprecation(ctx: Context, op: Operation): void {
    const d = op.deprecation;
    if (!d) return;
    ctx.set('Deprecation', `@${Math.floor(Date.parse(d.deprecatedAt) / 1000)}`);
    ctx.set('Sunset', new Date(d.sunsetAt).toUTCString());
    ctx.set('Link', `<${deps.publicBaseUrl}${V3_BASE}/capabilities>; rel="deprecation"`);
    if (deps.clock.now().getTime() >= Date.parse(d.sunsetAt))
      throw new AppError('operation_sunset');
  }

  function limitHeaders(ctx: Context, states: LimitState[]): void {
    const tightest = states.reduce((a, b) => (b.remaining < a.remaining ? b : a));
    ctx.set('RateLimit-Limit', String(tightest.limit));
    ctx.set('RateLimit-Remaining', String(tightest.remaining));
    ctx.set('RateLimit-Reset', String(tightest.resetSeconds));
  }

  /** Consumes limits in order; on a 429 every point this request took is given back. */
  async function consumeLimits(steps: [LimitKind, string, boolean][]): Promise<LimitState[]> {
    const taken: [LimitKind, string][] = [];
    const states: LimitState[] = [];
    for (const [kind, key, consume] of steps) {
      if (!consume) {
        taken.push([kind, key]);
        continue;
      }
      try {
        states.push(await services.rateLimits.consume(kind, key));
        taken.push([kind, key]);
      } catch (err) {
        if ((err as AppError).code === 'rate_limit_exceeded') {
          await Promise.all(taken.map(([k, v]) => services.rateLimits.refund(k, v)));
        }
        throw err;
      }
    }
    return states;
  }

  async function readJsonBody(ctx: Context, op: Operation, locale: Locale): Promise<unknown> {
    const hasContent =
      Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
    // Read the header itself: ctx.is() answers null for an empty body.
    const isJson = /^application\/json\s*(;|$)/i.test(ctx.get('content-type'));
    if ((op.hasBody || hasContent) && !isJson) throw new AppError('unsupported_media_type');
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
    // An operation without a body accepts none, or `{}`.
    if (body === undefined) return undefined;
    const keys =
      body && typeof body === 'object' && !Array.isArray(body) ? Object.keys(body) : [''];
    if (keys.length > 0) {
      throw new AppError('unknown_field', {
        details: keys.map((k) => ({
          field: k,
          code: 'unknown_field',
          message: 'This operation takes no body.',
        })),
      });
    }
    return undefined;
  }

  async function run(ctx: Context, trace: Trace, locale: Locale): Promise<void> {
    // The source limit comes first: unknown routes and wrong methods are answered without a
    // credential, so they must not be a way around it.
    const source = ctx.ip || 'unknown';
    await services.rateLimits.consume('source', source);
    const match = router.find(ctx.method, ctx.path);
    if (!match) {
      const allow = router.allowed(ctx.path);
      if (allow.length)
        throw new AppError('method_not_allowed', { headers: { Allow: allow.join(', ') } });
      if (router.routesWithBadEscapes(ctx.path)) throw new AppError('not_found');
      throw new AppError('operation_not_catalogued');
    }
    const op = match.op;
    trace.op = op;
    deprecation(ctx, op);

    const auth = await authenticate(ctx, services.credentials, services.human);
    trace.auth = auth;
    const states = await consumeLimits([
      ['source', source, false],
      ['account', String(auth.account.id), true],
      ['credential', String(auth.credential.id), true],
    ]);
    limitHeaders(ctx, states);
    await services.credentials.touch(auth.credential).catch(() => undefined);

    const missing = op.permissions.filter((p) => !hasPermission(auth.credential.permissions, p));
    if (missing.length) {
      throw new AppError('permission_denied', {
        details: missing.map((p) => ({ code: 'missing_permission', message: p, reason: p })),
      });
    }
    const accept = ctx.get('accept');
    // The common values need no parsing (negotiator costs a few percent of a small GET).
    const plain = accept === '' || accept === '*/*' || accept === 'application/json';
    if (!plain && !ctx.accepts('application/json')) throw new AppError('not_acceptable');

    const params = { ...match.params };
    if (!op.validatePath(params) || Object.values(params).some(hasNul))
      throw new AppError('not_found');
    const query = { ...ctx.query } as Record<string, unknown>;
    check(op.validateQuery, query, 'parameter', locale);
    rejectNul(query, 'parameter', locale);

    const keys = ctx.req.headersDistinct['idempotency-key'];
    // Reads are naturally idempotent: a key sent with a GET is ignored.
    const key = op.idempotency === 'none' ? undefined : keys?.[0];
    if (op.idempotency === 'required' && key === undefined)
      throw new AppError('idempotency_key_required');
    if (key !== undefined && (keys!.length > 1 || !KEY_PATTERN.test(key!)))
      throw new AppError('idempotency_key_invalid');

    const body = await readJsonBody(ctx, op, locale);
    const handler = deps.handlers[op.id as keyof Handlers] as unknown as (
      c: HandlerContext<any>,
    ) => Promise<any>;
    if (!handler) throw new AppError('operation_not_catalogued');
    const base = {
      params,
      query,
      body,
      auth,
      requestId: ctx.state.requestId as string,
      locale,
      // Present but empty is not absent: it fails the precondition (a client whose ETag variable
      // was unset must not silently lose the lost-update guard).
      ifMatch: ctx.req.headers['if-match'],
    };

    if (key === undefined) {
      const result = await handler({ ...base, tx: undefined });
      renderJson(ctx, result.status, result.body, result.headers);
      return;
    }

    const credentialId = auth.credential.id;
    const reservation = await services.idempotency.reserve(
      credentialId,
      key,
      requestHash(ctx.method, ctx.path, body),
    );
    if (reservation.kind === 'replay' && reservation.status >= 400) {
      // A recorded rejection is rendered again, localized and with this request's id.
      const { error } = JSON.parse(reservation.body!);
      const { code, details, ...extra } = error;
      throw new AppError(code, {
        status: reservation.status,
        details,
        extra,
        headers: { 'Idempotent-Replayed': 'true' },
      });
    }
    if (reservation.kind === 'replay') {
      renderJson(ctx, reservation.status, reservation.body ?? undefined, {
        ...reservation.headers,
        'Idempotent-Replayed': 'true',
      });
      return;
    }
    const { token } = reservation;
    try {
      await transaction(deps.db, async (tx) => {
        const result = await handler({ ...base, tx });
        const text = result.body === undefined ? null : JSON.stringify(result.body);
        const replayable = result.replayable !== false;
        await services.idempotency.complete(tx, credentialId, key, token, {
          status: result.status,
          headers: result.headers ?? {},
          // A response shown once (a credential's secret) is never stored, not even here.
          body: replayable ? text : null,
          replayable,
        });
        renderJson(ctx, result.status, text ?? undefined, result.headers);
      });
    } catch (err) {
      const e = toAppError(err);
      if (e.code === 'operation_ownership_lost') {
        // Another attempt owns the key now; it records the result.
      } else if (NOT_CONSUMING.has(e.code) || e.status >= 500) {
        await services.idempotency.release(credentialId, key, token).catch(() => undefined);
      } else {
        // A business rejection is the request's result: a retry gets the same answer.
        const body = JSON.stringify({ error: { code: e.code, details: e.details, ...e.extra } });
        await services.idempotency
          .complete(deps.db, credentialId, key, token, {
            status: e.status,
            headers: {},
            body,
            replayable: true,
          })
          .catch(() => undefined);
      }
      throw err;
    } finally {
      services.idempotency.settle(credentialId, key, token);
    }
  }

  return async function v3(ctx, next) {
    if (ctx.path !== V3_BASE && !ctx.path.startsWith(V3_BASE + '/')) return next();
    const started = performance.now();
    const locale = negotiateLocale(ctx.get('accept-language'));
    const trace: Trace = {};
    try {
      await run(ctx, trace, locale);
    } catch (err) {
      if (err instanceof ClientClosedRequest) {
        // No one is there to answer; the request log line and the audit entry say what happened.
        ctx.status = ClientClosedRequest.STATUS;
        ctx.state.clientClosed = true;
        return audit(ctx, trace, started, locale);
      }
      const e = toAppError(err);
      if (e.code === 'internal_error') deps.onError(err, ctx);
      renderError(ctx, e, locale);
    }
    await audit(ctx, trace, started, locale);
  };

  async function audit(ctx: Context, trace: Trace, started: number, locale: Locale) {
    ctx.state.route = trace.op ? V3_BASE + trace.op.path : undefined;
    try {
      await services.audit.record({
        requestId: ctx.state.requestId,
        accountId: trace.auth?.account.id ?? null,
        credentialId: trace.auth?.credential.id ?? null,
        adminId: trace.auth?.human?.adminId ?? null,
        method: ctx.method,
        route: trace.op?.path ?? null,
        operationId: trace.op?.id ?? null,
        path: ctx.path,
        status: ctx.status,
        durationMs: Math.round(performance.now() - started),
        ip: ctx.ip || null,
        createdAt: deps.clock.now().toISOString(),
      });
    } catch (err) {
      deps.onError(err, ctx);
      if (!ctx.state.clientClosed) renderError(ctx, new AppError('audit_unavailable'), locale);
    }
  }
}
