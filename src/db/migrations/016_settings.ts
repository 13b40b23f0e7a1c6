// User-profile settings: one row per account that has written them. Only the values set away from
// their defaults are stored (`values`, JSON); an account without a row reads the defaults.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('user_profile_settings', (t) => {
    t.integer('account_id').primary().references('accounts.id').onDelete('CASCADE');
    t.text('values').notNullable();
    t.string('revision', 32).notNullable();
    t.string('updated_at', 30).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('user_profile_settings');
}
