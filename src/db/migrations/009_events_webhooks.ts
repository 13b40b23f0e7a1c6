// Events (stored once, as recorded, kept 30 days) and webhooks: endpoints with their signing
// secrets (sealed; several are active during a rotation overlap), one delivery per event and
// endpoint, and one row per attempt. Deliveries and attempts go with their event (ON DELETE
// CASCADE), so the events sweep bounds them too.
import type { Knex } from 'knex';

const TS = 30;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('events', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('type', 100).notNullable();
    t.string('version', 20).notNullable();
    t.text('data').notNullable();
    t.string('created_at', TS).notNullable();
    t.index(['account_id', 'id']);
    t.index(['account_id', 'type', 'id']);
    t.index(['created_at']);
  });

  await knex.schema.createTable('webhook_endpoints', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('url', 2048).notNullable();
    t.string('description', 500).nullable();
    t.text('event_types').notNullable();
    t.string('payload_version', 20).notNullable();
    t.string('status', 20).notNullable();
    t.string('disabled_reason', 30).nullable();
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.string('deleted_at', TS).nullable();
    t.index(['account_id', 'status']);
  });

  await knex.schema.createTable('webhook_secrets', (t) => {
    t.increments('id');
    t.integer('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    t.text('sealed').notNullable();
    t.string('created_at', TS).notNullable();
    // Null for the current secret; a rotated-out secret signs until then.
    t.string('expires_at', TS).nullable();
    t.index(['endpoint_id']);
  });

  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable();
    t.integer('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    t.integer('event_id').notNullable().references('events.id').onDelete('CASCADE');
    t.string('event_type', 100).notNullable();
    t.string('status', 20).notNullable();
    t.integer('attempts_count').notNullable().defaultTo(0);
    t.integer('automatic_attempts').notNullable().defaultTo(0);
    t.integer('replays_pending').notNullable().defaultTo(0);
    // Its job found the endpoint at its concurrency limit: the next finished attempt wakes it.
    t.boolean('waiting').notNullable().defaultTo(false);
    // While in_progress: the status to go back to when a replay attempt fails.
    t.string('prior_status', 20).nullable();
    t.string('lease_owner', 100).nullable();
    t.string('lease_until', TS).nullable();
    t.string('next_attempt_at', TS).nullable();
    // When the delivery next needs a worker (a due attempt, a replay, an expired lease); null
    // when nothing is left to do. The recovery sweep scans it.
    t.string('due_at', TS).nullable();
    t.string('deadline_at', TS).notNullable();
    t.string('delivered_at', TS).nullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.unique(['endpoint_id', 'event_id']);
    t.index(['endpoint_id', 'created_at', 'id']);
    t.index(['endpoint_id', 'status']);
    t.index(['due_at']);
    t.index(['event_id']);
  });

  await knex.schema.createTable('webhook_attempts', (t) => {
    t.increments('id');
    t.integer('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    t.integer('number').notNullable();
    t.string('origin', 20).notNullable();
    t.integer('http_status').nullable();
    t.integer('duration_ms').notNullable();
    t.string('started_at', TS).notNullable();
    t.string('finished_at', TS).notNullable();
    t.string('next_attempt_at', TS).nullable();
    t.text('response_excerpt').nullable();
    t.string('transport_error', 500).nullable();
    t.unique(['delivery_id', 'number']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_attempts');
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhook_secrets');
  await knex.schema.dropTable('webhook_endpoints');
  await knex.schema.dropTable('events');
}
