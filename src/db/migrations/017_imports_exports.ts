// Imports of students' access from a CSV file and exports of users into one.
// - imports: the import itself (mapping, duplicate policy, row counters, status).
// - import_rows: one row per CSV record, written by an analysis: its values, `ready`,
//   `not_ready` (with the reason) or `ignored` (a duplicate), and once processed the attempt that
//   applied it. `applied_attempt_id` is set in the transaction that applies the row, so a row is
//   applied exactly once whatever the number of attempts or crashed workers.
// - import_attempts: the processing attempts (each runs as an operation).
// - exports: a users export and, once generated, its file (of purpose `export`).
// - accounts.imports_enabled: the account's imports feature (the admin CLI switches it).
// `file_id` columns carry no foreign key: the files table belongs to the files area, whose
// migration may run after this one on a database migrated in another order.
import type { Knex } from 'knex';

const TS = 30;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('accounts', (t) => {
    t.boolean('imports_enabled').notNullable().defaultTo(true);
  });

  await knex.schema.createTable('imports', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('file_id').notNullable();
    t.string('type', 40).notNullable();
    t.string('status', 20).notNullable();
    t.string('duplicate_policy', 20).notNullable();
    t.text('mapping').notNullable();
    t.integer('rows_total').notNullable().defaultTo(0);
    t.integer('rows_ready').notNullable().defaultTo(0);
    t.integer('rows_not_ready').notNullable().defaultTo(0);
    t.integer('rows_ignored').notNullable().defaultTo(0);
    t.integer('rows_applied').notNullable().defaultTo(0);
    t.integer('current_operation_id').nullable();
    t.text('failure_reason').nullable();
    t.boolean('deleted').notNullable().defaultTo(false);
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.index(['account_id', 'created_at', 'id']);
  });

  await knex.schema.createTable('import_rows', (t) => {
    t.integer('import_id').notNullable().references('imports.id').onDelete('CASCADE');
    t.integer('row_number').notNullable();
    t.string('status', 20).notNullable();
    t.string('reason', 40).nullable();
    t.string('email', 320).nullable();
    t.string('product_external_id', 200).nullable();
    t.string('access_status', 20).nullable();
    /** email_lower + product id: rows with the same key are duplicates. */
    t.string('dedupe_key', 600).nullable();
    t.integer('applied_attempt_id').nullable();
    t.primary(['import_id', 'row_number']);
    t.index(['import_id', 'status', 'row_number']);
    t.index(['import_id', 'dedupe_key', 'row_number']);
  });

  await knex.schema.createTable('import_attempts', (t) => {
    t.increments('id');
    t.integer('import_id').notNullable().references('imports.id').onDelete('CASCADE');
    t.integer('operation_id').nullable();
    t.integer('credential_id').nullable();
    t.string('mode', 20).notNullable();
    t.integer('rows').notNullable();
    t.string('created_at', TS).notNullable();
    t.index(['import_id', 'id']);
  });

  await knex.schema.createTable('exports', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('operation_id').nullable();
    t.string('resource', 20).notNullable();
    t.string('status', 20).notNullable();
    t.text('columns').notNullable();
    t.text('filters').notNullable();
    t.integer('file_id').nullable();
    t.integer('total').nullable();
    t.text('failure_reason').nullable();
    t.string('snapshot_at', TS).nullable();
    t.string('created_at', TS).notNullable();
    t.string('expires_at', TS).nullable();
    t.index(['status', 'expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['exports', 'import_attempts', 'import_rows', 'imports'])
    await knex.schema.dropTable(table);
  await knex.schema.alterTable('accounts', (t) => t.dropColumn('imports_enabled'));
}
