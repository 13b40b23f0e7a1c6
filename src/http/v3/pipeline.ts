// The v3 request pipeline, stage by stage (src/http/v3/stages/):
//   limits (source) -> route (+ deprecation) -> authentication -> limits (account, credential)
//   -> permission -> Accept -> input (parameters, Idempotency-Key, body) -> idempotent(execute)
//   (the bound handler, run in one transaction with the recorded result when keyed) -> respond
//   (JSON, or Server-Sent Events) -> audit (on PostgreSQL a keyed transaction's entry went with
//   its COMMIT).
// Every failure is an AppError rendered once, in the specification's envelope. Each operation of
// the catalog says what body it takes and what it answers (JSON, or a stream of events), so the
// stages need no special cases per route.
import type { Context, Middleware } from 'koa';
import { Readable } from 'node:stream';
import type { Db } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { negotiateLocale, type Locale } from '../../i18n/messages.ts';
import type { AuditService } from '../../domain/audit/repo.ts';
import type { CredentialsService } from '../../domain/credentials/service.ts';
import type { IdempotencyService } from '../../domain/idempotency/service.ts';
import type { RateLimits } from '../../domain/ratelimit.ts';
import type { Handlers } from './handlers/types.ts';
import { closedByClient } from '../body.ts';
import { authenticate, type HumanVerifier } from './authenticate.ts';
import type { Operation } from './catalog.ts';
import { renderError, renderJson, toAppError } from './render.ts';
import { V3_BASE } from './router.ts';
import { auditStage, type Trace } from './stages/audit.ts';
import { executeStage, type Answer } from './stages/execute.ts';
import { idempotentStage } from './stages/idempotent.ts';
import { authorize, negotiate, readInput } from './stages/input.ts';
import { limitsStage } from './stages/limits.ts';
import { sseBody } from './sse.ts';
import { routeStage } from './stages/route.ts';

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
  /** Audits of event streams, written when they end; the app waits for them before closing. */
  streamAudits?: Set<Promise<void>>;
}

function respond(ctx: Context, op: Operation, answer: Answer): void {
  if (op.responseKind === 'event-stream' && answer.stream) {
    ctx.status = answer.status;
    for (const [k, v] of Object.entries(answer.headers ?? {})) ctx.set(k, v);
    ctx.type = 'text/event-stream';
    ctx.body = sseBody(answer.stream);
    return;
  }
  renderJson(ctx, answer.status, answer.body, answer.headers);
}

export function v3Pipeline(deps: PipelineDeps): Middleware {
  const { services } = deps;
  const limits = limitsStage(services.rateLimits);
  const route = routeStage(deps.catalog, deps.clock, deps.publicBaseUrl);
  const execute = executeStage(deps.handlers);
  const idempotent = idempotentStage(deps.db, services.idempotency);
  const audit = auditStage(services.audit, deps.clock, deps.onError);

  async function run(ctx: Context, trace: Trace, started: number, locale: Locale) {
    await limits.source(ctx);
    const { op, params } = route(ctx);
    trace.op = op;
    const auth = await authenticate(ctx, services.credentials, services.human);
    trace.auth = auth;
    await limits.caller(ctx, auth);
    await services.credentials.touch(auth.credential).catch(() => undefined);
    authorize(op, auth);
    negotiate(ctx, op);
    const input = await readInput(ctx, op, params, locale);
    const run = execute(ctx, op, input, auth, locale);
    // Only a keyed call's transaction can carry its entry (not built for the others: reads are hot).
    const entry = input.key === undefined ? undefined : audit.withCommit(ctx, trace, started);
    respond(ctx, op, await idempotent(ctx, op, input, auth, run, entry));
  }

  return async function v3(ctx, next) {
    if (ctx.path !== V3_BASE && !ctx.path.startsWith(V3_BASE + '/')) return next();
    const started = performance.now();
    const locale = negotiateLocale(ctx.get('accept-language'));
    const trace: Trace = {};
    try {
      await run(ctx, trace, started, locale);
    } catch (err) {
      // No one is there to answer; the request log line and the audit entry say what happened.
      if (!closedByClient(ctx, err)) {
        const e = toAppError(err);
        if (e.code === 'internal_error') deps.onError(err, ctx);
        renderError(ctx, e, locale);
      }
    }
    if (trace.op?.responseKind === 'event-stream' && ctx.body instanceof Readable) {
      // A stream is audited when it ends, with how long it stayed open; waiting for that here
      // would hold the response back (Koa sends the body once this middleware returns).
      ctx.state.route = V3_BASE + trace.op.path;
      ctx.res.once('close', () => {
        const done = audit.record(ctx, trace, started, locale);
        deps.streamAudits?.add(done);
        void done.finally(() => deps.streamAudits?.delete(done));
      });
      return;
    }
    await audit.record(ctx, trace, started, locale);
  };
}
