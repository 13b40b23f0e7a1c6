// The 48 h sweep of idempotency records (`created_at < cutoff`) scanned the whole table; on SQLite
// that scan runs on the event loop. Records are written in time order, so the index only grows at
// its right edge.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.index(['created_at'], 'idempotency_keys_created_at_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropIndex(['created_at'], 'idempotency_keys_created_at_index');
  });
}
