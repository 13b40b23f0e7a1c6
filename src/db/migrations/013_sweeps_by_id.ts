// The retention sweeps of events and idempotency records walk the primary key (src/db/purge.ts),
// as the audit sweep does: their created_at indexes cost a page write on every commit that
// inserted a row, on the hot path of every write request.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.dropIndex(['created_at'], 'events_created_at_index');
  });
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropIndex(['created_at'], 'idempotency_keys_created_at_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.index(['created_at'], 'idempotency_keys_created_at_index');
  });
  await knex.schema.alterTable('events', (t) => {
    t.index(['created_at'], 'events_created_at_index');
  });
}
