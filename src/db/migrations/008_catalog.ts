// The catalog: products, their modules (groups and modules, ordered per parent) and their access
// schedules (each owns a tag of the same account). A record copied into a replica account points
// at the record it copies (`source_id`); deleting a source deletes its copies (ON DELETE CASCADE),
// and deleting a product deletes its modules and schedules. Schedules' tags are never deleted
// here: `tag_id` has no cascade, and the tags repository refuses to delete a schedule's tag.
import type { Knex } from 'knex';

const TS = 30;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('products', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('source_id').nullable().references('products.id').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    t.text('description').nullable();
    t.string('status', 20).notNullable();
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.index(['account_id', 'created_at', 'id']);
    // One copy of a source per replica account; several NULLs are allowed on both engines.
    t.unique(['account_id', 'source_id']);
    t.index(['source_id']);
  });

  await knex.schema.createTable('modules', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('product_id').notNullable().references('products.id').onDelete('CASCADE');
    t.integer('parent_id').nullable().references('modules.id').onDelete('CASCADE');
    t.integer('source_id').nullable().references('modules.id').onDelete('CASCADE');
    t.string('kind', 10).notNullable();
    t.string('status', 20).notNullable();
    t.string('name', 200).notNullable();
    t.integer('position').notNullable();
    t.boolean('deleted').notNullable().defaultTo(false);
    // The group whose deletion moved this module to the trash (restoring the group restores it).
    t.integer('trashed_with').nullable();
    t.text('settings').nullable();
    t.string('image', 2048).nullable();
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.index(['product_id', 'position', 'id']);
    t.index(['parent_id']);
    t.index(['source_id']);
    t.unique(['account_id', 'source_id']);
  });

  await knex.schema.createTable('access_schedules', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.integer('product_id').notNullable().references('products.id').onDelete('CASCADE');
    t.integer('tag_id').notNullable().references('tags.id');
    t.boolean('is_default').notNullable().defaultTo(false);
    t.boolean('deleted').notNullable().defaultTo(false);
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.index(['product_id', 'created_at', 'id']);
    t.unique(['tag_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('access_schedules');
  await knex.schema.dropTable('modules');
  await knex.schema.dropTable('products');
}
