// Asynchronous operations (batches, publications, sandbox resets): the operation, one item per
// unit of work, one attempt per run. And, on SQLite only, the job queue of the in-process runner
// (PostgreSQL uses graphile-worker's own schema, installed by src/jobs/pg.ts).
import type { Knex } from 'knex';

const TS = 30;

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') {
    await knex.schema.createTable('jobs', (t) => {
      t.increments('id');
      t.string('task', 100).notNullable();
      t.text('payload').notNullable();
      t.string('run_at', TS).notNullable();
      t.integer('attempts').notNullable().defaultTo(0);
      t.integer('max_attempts').notNullable().defaultTo(25);
      t.string('locked_by', 200).nullable();
      t.string('locked_at', TS).nullable();
      t.text('last_error').nullable();
      // A schedule's pending run (the sweeps): at most one waiting job per key.
      t.string('key', 200).nullable().unique();
      t.string('created_at', TS).notNullable();
      t.index(['run_at', 'id']);
    });
  }

  await knex.schema.createTable('operations', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('environment', 10).notNullable();
    t.integer('credential_id').nullable();
    t.string('type', 100).notNullable();
    t.string('status', 30).notNullable();
    t.integer('total').notNullable().defaultTo(0);
    t.integer('done').notNullable().defaultTo(0);
    t.integer('failed').notNullable().defaultTo(0);
    t.integer('attempt_number').notNullable().defaultTo(1);
    t.boolean('cancellation_requested').notNullable().defaultTo(false);
    t.text('error').nullable();
    t.text('result').nullable();
    // Who is running it: one attempt at a time; the lease is renewed with every committed chunk.
    t.string('lease_owner', 200).nullable();
    t.string('lease_expires_at', TS).nullable();
    t.string('created_at', TS).notNullable();
    t.string('started_at', TS).nullable();
    t.string('finished_at', TS).nullable();
    t.string('expires_at', TS).notNullable();
    t.index(['account_id', 'environment', 'status']);
    t.index(['expires_at']);
  });

  await knex.schema.createTable('operation_items', (t) => {
    t.increments('id');
    t.integer('operation_id').notNullable().references('operations.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.string('key', 200).notNullable();
    t.text('payload').notNullable();
    t.string('status', 20).notNullable();
    t.text('error').nullable();
    t.boolean('retryable').notNullable().defaultTo(false);
    t.text('result').nullable();
    t.integer('attempt_number').nullable();
    t.string('updated_at', TS).notNullable();
    t.unique(['operation_id', 'key']);
    t.unique(['operation_id', 'position']);
    t.index(['operation_id', 'status', 'position']);
  });

  await knex.schema.createTable('operation_attempts', (t) => {
    t.increments('id');
    t.integer('operation_id').notNullable().references('operations.id').onDelete('CASCADE');
    t.integer('number').notNullable();
    t.string('origin', 20).notNullable();
    t.string('status', 30).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('started_at', TS).nullable();
    t.string('finished_at', TS).nullable();
    t.unique(['operation_id', 'number']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('operation_attempts');
  await knex.schema.dropTableIfExists('operation_items');
  await knex.schema.dropTableIfExists('operations');
  await knex.schema.dropTableIfExists('jobs');
}
