// Lookups the legacy generations make: v1 pages through students by id (keyset, so each page
// costs the same), finds them by document (CPF) and lists the students of a tag in id order;
// /login/auto finds a student by their auto-login token.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.index(['account_id', 'id'], 'users_account_id_id_index');
    t.index(['account_id', 'document'], 'users_account_document_index');
    t.index(['auto_login_token'], 'users_auto_login_token_index');
  });
  await knex.schema.alterTable('user_tags', (t) => {
    t.index(['tag_id', 'user_id'], 'user_tags_tag_user_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('user_tags', (t) => {
    t.dropIndex(['tag_id', 'user_id'], 'user_tags_tag_user_index');
  });
  await knex.schema.alterTable('users', (t) => {
    t.dropIndex(['auto_login_token'], 'users_auto_login_token_index');
    t.dropIndex(['account_id', 'document'], 'users_account_document_index');
    t.dropIndex(['account_id', 'id'], 'users_account_id_id_index');
  });
}
