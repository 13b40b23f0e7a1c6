// Validation plans (issue #18):
// - plans: a manifest planned against an account's configuration, its changes (JSON, in the order
//   they apply) and, once applied, the operation that applies them.
// - plan_keys: the operator's key of each resource a plan created or adopted, so the next plan of
//   the same manifest finds it (`unchanged`) instead of creating it again.
import type { Knex } from 'knex';

const TS = 30;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('plans', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('credential_id').nullable();
    t.boolean('prune').notNullable();
    t.text('changes').notNullable();
    t.integer('operation_id').nullable();
    t.string('created_at', TS).notNullable();
    t.string('expires_at', TS).notNullable();
    t.index(['account_id', 'created_at', 'id']);
  });

  await knex.schema.createTable('plan_keys', (t) => {
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('type', 40).notNullable();
    t.string('key', 200).notNullable();
    t.integer('resource_id').notNullable();
    t.primary(['account_id', 'type', 'key']);
    t.index(['account_id', 'type', 'resource_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('plan_keys');
  await knex.schema.dropTable('plans');
}
