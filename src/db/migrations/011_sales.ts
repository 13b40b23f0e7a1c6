// Sales and what they grant: deliveries (per payment gateway: the gateway's product ids they
// listen to, the products and tags they grant), the transactions gateways post back, enrollments
// (a student's access to a product), lessons with the students' progress and exam results, and
// the email outbox with each address's send history and bounce flag.
// Deleting a student or a product deletes their enrollments, progress and results (CASCADE);
// deleting a delivery or a transaction leaves the enrollments they granted (SET NULL).
import type { Knex } from 'knex';

const TS = 30;

export async function up(knex: Knex): Promise<void> {
  // The catalog has modules but no lessons yet: a lesson (or an exam item) of a product, just
  // enough to count a product's lessons and to record progress and results against real rows.
  await knex.schema.createTable('lessons', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('product_id').notNullable().references('products.id').onDelete('CASCADE');
    t.integer('module_id').nullable().references('modules.id').onDelete('SET NULL');
    t.string('kind', 10).notNullable();
    t.string('name', 200).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.index(['product_id', 'created_at', 'id']);
  });

  await knex.schema.createTable('deliveries', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    // A copy in a replica account points at the delivery it copies.
    t.integer('source_id').nullable().references('deliveries.id').onDelete('CASCADE');
    t.string('gateway', 50).notNullable();
    t.string('name', 200).notNullable();
    t.string('kind', 20).notNullable();
    t.string('status', 20).notNullable();
    t.boolean('hidden').notNullable().defaultTo(false);
    // SHA-256 of the postback secret: it is compared, never shown.
    t.string('secret_hash', 64).nullable();
    t.integer('duration').nullable();
    t.string('duration_unit', 10).notNullable();
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.index(['account_id', 'created_at', 'id']);
    t.unique(['account_id', 'source_id']);
  });

  await knex.schema.createTable('delivery_external_ids', (t) => {
    t.increments('id');
    t.integer('delivery_id').notNullable().references('deliveries.id').onDelete('CASCADE');
    t.integer('account_id').notNullable();
    t.string('gateway', 50).notNullable();
    t.string('external_id', 200).notNullable();
    // A gateway product id belongs to one delivery of the account.
    t.unique(['account_id', 'gateway', 'external_id']);
    t.index(['delivery_id']);
  });

  await knex.schema.createTable('delivery_products', (t) => {
    t.integer('delivery_id').notNullable().references('deliveries.id').onDelete('CASCADE');
    t.integer('product_id').notNullable().references('products.id').onDelete('CASCADE');
    t.integer('access_schedule_id')
      .notNullable()
      .references('access_schedules.id')
      .onDelete('CASCADE');
    t.primary(['delivery_id', 'product_id']);
    t.index(['access_schedule_id']);
  });

  await knex.schema.createTable('delivery_tags', (t) => {
    t.integer('delivery_id').notNullable().references('deliveries.id').onDelete('CASCADE');
    t.integer('tag_id').notNullable().references('tags.id').onDelete('CASCADE');
    t.primary(['delivery_id', 'tag_id']);
  });

  await knex.schema.createTable('sales_transactions', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('delivery_id').notNullable().references('deliveries.id').onDelete('CASCADE');
    t.integer('user_id').nullable().references('users.id').onDelete('SET NULL');
    t.string('engine', 50).notNullable();
    t.string('transaction_id', 200).notNullable();
    t.string('recurrence_id', 200).nullable();
    // The gateway's status, normalized (approved, refunded, ... subscription_canceled).
    t.string('event', 30).notNullable();
    t.text('product_ids').notNullable();
    t.string('client_name', 200).nullable();
    t.string('client_email', 320).nullable();
    t.string('client_email_lower', 320).nullable();
    t.string('client_doc', 40).nullable();
    t.string('client_phone', 40).nullable();
    t.string('status', 20).notNullable();
    t.string('transaction_status', 30).nullable();
    t.string('recurrence_status', 30).nullable();
    t.string('error', 100).nullable();
    t.string('created_at', TS).notNullable();
    // A repeated postback (same sale, same status, same delivery) is recorded once.
    t.unique(['delivery_id', 'transaction_id', 'event']);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'engine', 'transaction_id']);
    t.index(['account_id', 'engine', 'recurrence_id']);
  });

  await knex.schema.createTable('enrollments', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.integer('product_id').notNullable().references('products.id').onDelete('CASCADE');
    t.integer('access_schedule_id')
      .notNullable()
      .references('access_schedules.id')
      .onDelete('CASCADE');
    t.integer('delivery_id').nullable().references('deliveries.id').onDelete('SET NULL');
    t.integer('transaction_id').nullable().references('sales_transactions.id').onDelete('SET NULL');
    t.string('started_at', TS).notNullable();
    t.integer('duration').nullable();
    t.string('duration_unit', 10).notNullable();
    t.string('ends_at', TS).nullable();
    // Ended on purpose (PATCH, refund...); one whose ends_at has passed is ended too.
    t.boolean('ended').notNullable().defaultTo(false);
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.index(['user_id', 'created_at', 'id']);
    t.index(['user_id', 'product_id']);
    t.index(['delivery_id']);
    t.index(['transaction_id']);
  });

  await knex.schema.createTable('lesson_progress', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.integer('product_id').notNullable().references('products.id').onDelete('CASCADE');
    t.integer('lesson_id').notNullable().references('lessons.id').onDelete('CASCADE');
    t.integer('percent').notNullable();
    t.boolean('completed').notNullable();
    t.string('completed_at', TS).nullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.unique(['user_id', 'lesson_id']);
    t.index(['user_id', 'product_id']);
  });

  await knex.schema.createTable('exam_results', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.integer('product_id').notNullable().references('products.id').onDelete('CASCADE');
    t.integer('lesson_id').notNullable().references('lessons.id').onDelete('CASCADE');
    t.double('score').notNullable();
    t.double('max_score').notNullable();
    t.boolean('passed').notNullable();
    t.integer('attempts').notNullable();
    t.string('submitted_at', TS).notNullable();
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.unique(['user_id', 'lesson_id']);
  });

  // Every email the platform sends: written in the transaction that causes it, sent by a job.
  await knex.schema.createTable('emails', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('user_id').nullable().references('users.id').onDelete('SET NULL');
    t.string('to_email', 320).notNullable();
    t.string('to_email_lower', 320).notNullable();
    t.string('kind', 50).notNullable();
    t.string('subject', 300).notNullable();
    t.text('body').notNullable();
    // queued, sent, failed (permanently refused), suppressed (the address is on the bounce list)
    t.string('status', 20).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('error', 500).nullable();
    t.string('created_at', TS).notNullable();
    t.string('sent_at', TS).nullable();
    t.index(['account_id', 'to_email_lower', 'id']);
  });

  await knex.schema.createTable('email_recipients', (t) => {
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('email_lower', 320).notNullable();
    t.integer('sent_count').notNullable().defaultTo(0);
    t.string('last_sent_at', TS).nullable();
    t.boolean('bounced').notNullable().defaultTo(false);
    t.string('bounced_at', TS).nullable();
    t.string('bounce_reason', 500).nullable();
    t.string('updated_at', TS).notNullable();
    t.primary(['account_id', 'email_lower']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'email_recipients',
    'emails',
    'exam_results',
    'lesson_progress',
    'enrollments',
    'sales_transactions',
    'delivery_tags',
    'delivery_products',
    'delivery_external_ids',
    'deliveries',
    'lessons',
  ])
    await knex.schema.dropTable(table);
}
