// v1 bounce list: `bounce: false` takes an address off the list so emails reach it again,
// `bounce: true` puts it on. Either way the address must have received an email from the school.
import type Router from '@koa/router';
import { AppError } from '../../../errors.ts';
import { rejection } from '../../../domain/shared/rejections.ts';
import type { LegacyRouteDeps } from '../deps.ts';
import { legacyContract } from '../contract.ts';
import { isEmail, legacyBody } from '../input.ts';

const NEVER_EMAILED = 'This address never received an email.';

export function bounceRoutes(router: Router, { services }: LegacyRouteDeps): void {
  const { outbox } = services;
  const contract = legacyContract('v1');

  router.post('/usuario/bounce/:email', async (ctx) => {
    const email = ctx.params.email!;
    // The path names an address, not a resource id: a malformed one is a bad request.
    if (!isEmail(email))
      throw new AppError('validation_failed', {
        details: [{ parameter: 'email', code: 'invalid_email', message: 'Must be an email.' }],
      });
    const { bounce } = await legacyBody<{ bounce: boolean }>(ctx, contract, 'v1Bounce');
    const accountId: number = ctx.state.legacy.accountId;
    if (!bounce) await outbox.unbounce(accountId, email);
    else {
      // The service takes any address on the list; the v1 route keeps its documented rule.
      if (!(await outbox.hasReceived(accountId, email)))
        throw rejection('domain_rule_violation', 'never_emailed', NEVER_EMAILED, 'email');
      await outbox.bounce(accountId, email, 'Put on the bounce list through v1.');
    }
    // Only code and success: this route has no data.
    ctx.body = { code: 200, success: true };
  });
}
