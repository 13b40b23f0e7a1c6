// Stage "limits": the per-source limit (before routing and authentication: unknown routes and
// wrong methods are answered without a credential, so they must not be a way around it), then the
// account and credential limits of an authenticated caller, with the RateLimit-* headers.
import type { Context } from 'koa';
import type { AppError } from '../../../errors.ts';
import type { AuthContext } from '../../../domain/credentials/auth.ts';
import type { RateLimits, LimitKind, LimitState } from '../../../domain/ratelimit.ts';

export function limitsStage(rateLimits: RateLimits) {
  const sourceOf = (ctx: Context) => ctx.ip || 'unknown';

  /** On a 429 every point this request took, its source point included, is given back. */
  async function consume(source: string, steps: [LimitKind, string][]): Promise<LimitState[]> {
    const taken: [LimitKind, string][] = [['source', source]];
    const states: LimitState[] = [];
    for (const [kind, key] of steps) {
      try {
        states.push(await rateLimits.consume(kind, key));
        taken.push([kind, key]);
      } catch (err) {
        if ((err as AppError).code === 'rate_limit_exceeded')
          await Promise.all(taken.map(([k, v]) => rateLimits.refund(k, v)));
        throw err;
      }
    }
    return states;
  }

  return {
    async source(ctx: Context): Promise<void> {
      await rateLimits.consume('source', sourceOf(ctx));
    },
    async caller(ctx: Context, auth: AuthContext): Promise<void> {
      const states = await consume(sourceOf(ctx), [
        ['account', String(auth.account.id)],
        ['credential', String(auth.credential.id)],
      ]);
      const tightest = states.reduce((a, b) => (b.remaining < a.remaining ? b : a));
      ctx.set('RateLimit-Limit', String(tightest.limit));
      ctx.set('RateLimit-Remaining', String(tightest.remaining));
      ctx.set('RateLimit-Reset', String(tightest.resetSeconds));
    },
  };
}
