// Webhook deliveries are claimed through the lease primitive (src/db/lease.ts, issue #20), which
// counts each endpoint's held rows (lease_owner set, lease not run out) at every claim: a partial
// index keeps that count to the rows held, not the endpoint's whole history. The `waiting` flag
// (a delivery that found its endpoint full) is no longer written: a claim takes the endpoint's
// due deliveries oldest first. Rows left waiting by the previous version are made plain due rows.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex('webhook_deliveries').where('waiting', true).update({ waiting: false });
  await knex.raw(
    'CREATE INDEX webhook_deliveries_held_index ON webhook_deliveries (endpoint_id, lease_until) ' +
      'WHERE lease_owner IS NOT NULL',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX webhook_deliveries_held_index');
}
