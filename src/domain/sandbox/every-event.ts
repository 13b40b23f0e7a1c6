// The `every_event` scenario: one of each event type of the catalog, in one part, through the
// services that record them. `operation.finished` is the scenario operation's own, when it ends.
// Each step is chosen to record exactly one event: a refund of a sale the delivery never granted
// records the transaction alone, and deleting the student last takes its tags, enrollment and
// membership without events of their own.
import type { AuthContext } from '../credentials/auth.ts';
import type { Credential } from '../credentials/repo.ts';
import { Prng } from './prng.ts';
import type { Scenario } from './tools.ts';

export const everyEvent: Scenario = {
  parts: () => ['events'],
  async load(t, tx, accountId, p) {
    const rng = new Prng(p.seed, 'events');
    const first = rng.pick(['Ana', 'Bruno', 'Carla', 'Diego']);
    // The services that act for a caller (automations record who asked for a send) get the
    // credential that asked for the scenario.
    const auth: AuthContext = {
      account: { id: accountId, sandbox: true, status: 'active' },
      credential: { id: p.credential_id, accountId } as Credential,
      human: null,
    };
    const opts = { tx };
    const email = `${first.toLowerCase()}.${rng.digits(4)}@example.com`;
    const user = await t.users.create(accountId, { name: first, email }, opts); // user.created
    await t.users.update(accountId, user.id, { name: `${first} Souza` }, undefined, opts); // user.updated
    const tag = await t.tags.create(accountId, { name: 'every-event' }, opts);
    await t.tags.add(accountId, user.id, tag.id, opts); // tag.assigned
    await t.tags.unassign(accountId, user.id, tag.id, opts); // tag.removed
    const product = await t.catalog.create(accountId, { name: 'Every event course' }, opts);
    await t.catalog.publishProduct({ tx }, accountId, product.id); // product.published
    const grant = { user_id: String(user.id), product_id: String(product.id), duration: 1 };
    const { enrollment } = await t.enrollments.grant(
      accountId,
      { ...grant, duration_unit: 'month' },
      opts,
    ); // enrollment.created
    await t.enrollments.grant(accountId, { ...grant, duration_unit: 'month' }, opts); // enrollment.updated
    await t.enrollments.update(accountId, enrollment.id, { ended: true }, undefined, opts); // enrollment.ended
    const delivery = await t.deliveries.create(
      accountId,
      { gateway: 'generic', name: 'Every event checkout', external_ids: ['every-event'] },
      opts,
    );
    await t.postbacks.receiveIn({ tx }, delivery, {
      transaction_id: `refund-${p.seed}`,
      status: 'refunded',
      product_id: 'every-event',
      client_name: first,
      client_email: email,
    }); // transaction.recorded
    const communication = { subject: 'Hello', body: 'Welcome aboard.' };
    const diamond = await t.automations.createDiamond(
      accountId,
      {
        name: 'Every event journey',
        stages: [
          { key: 'welcome', name: 'Welcome', communication },
          { key: 'engaged', name: 'Engaged', communication },
        ],
      },
      opts,
    );
    const m = await t.automations.join(auth, diamond.id, user.id, opts);
    await t.automations.move(
      auth,
      diamond.id,
      m.id,
      { stage: 'engaged', reason: 'every_event scenario' },
      undefined,
      opts,
    ); // diamond_membership.stage_changed
    await t.users.remove(accountId, user.id, undefined, opts); // user.deleted
    return { user_id: String(user.id) };
  },
};
