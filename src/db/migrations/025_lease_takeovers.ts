// The lease primitive (src/db/lease.ts) counts, in the row, how often a claim took a lease over
// from another holder (expired, or a worker known dead): operators see rows that changed hands.
import type { Knex } from 'knex';

const TABLES = ['operations', 'webhook_deliveries', 'event_streams'];

export async function up(knex: Knex): Promise<void> {
  for (const table of TABLES)
    await knex.schema.alterTable(table, (t) =>
      t.integer('lease_takeovers').notNullable().defaultTo(0),
    );
}

export async function down(knex: Knex): Promise<void> {
  for (const table of TABLES)
    await knex.schema.alterTable(table, (t) => t.dropColumn('lease_takeovers'));
}
