// Diamond automations (ordered stages, each with the communication it sends), their memberships
// and the processing attempts that send a stage's communication through the email outbox; and event streams, the Server-Sent
// Events subscriptions of a credential. A membership goes with its student (ON DELETE CASCADE: a
// sandbox reset or a deleted student must not be blocked by an automation).
import type { Knex } from 'knex';

const TS = 30;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('diamonds', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('name', 200).notNullable();
    // [{key, name, communication: {subject, body}}] in stage order; never edited in place.
    t.text('stages').notNullable();
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.index(['account_id', 'id']);
  });

  await knex.schema.createTable('diamond_memberships', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('diamond_id').notNullable().references('diamonds.id').onDelete('CASCADE');
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.string('stage', 50).notNullable();
    t.integer('stage_position').notNullable();
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.unique(['diamond_id', 'user_id']);
    t.index(['user_id']);
  });

  await knex.schema.createTable('diamond_processing_attempts', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('membership_id')
      .notNullable()
      .references('diamond_memberships.id')
      .onDelete('CASCADE');
    // The stage change whose communication this sends (events are kept 30 days; no foreign key).
    t.integer('event_id').nullable();
    t.string('stage', 50).notNullable();
    // The outbox email that carries the communication (null when nothing was sent: `skipped`).
    // Its status is the attempt's: queued, then sent, or failed (refused, or a bounced address).
    t.integer('email_id').nullable();
    t.string('status', 20).notNullable();
    t.integer('requested_by_id').nullable();
    t.string('requested_by_kind', 20).notNullable();
    t.string('selection_mode', 20).notNullable();
    t.integer('selection_rows').notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.index(['membership_id', 'id']);
  });

  await knex.schema.createTable('event_streams', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('credential_id').notNullable().references('credentials.id').onDelete('CASCADE');
    // JSON array of event types, or null for every type.
    t.text('types').nullable();
    // The last event id sent on the stream: a connection without a cursor resumes after it.
    t.integer('position').notNullable().defaultTo(0);
    // The open connection's lease (one at a time, across instances), renewed while it lives.
    t.string('connection_id', 64).nullable();
    t.string('connection_expires_at', TS).nullable();
    t.string('last_connected_at', TS).nullable();
    t.string('created_at', TS).notNullable();
    t.index(['account_id', 'id']);
    t.index(['credential_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('event_streams');
  await knex.schema.dropTableIfExists('diamond_processing_attempts');
  await knex.schema.dropTableIfExists('diamond_memberships');
  await knex.schema.dropTableIfExists('diamonds');
}
