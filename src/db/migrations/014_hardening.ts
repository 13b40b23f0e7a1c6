// Postback URLs carry a token beside the delivery id (an id alone is guessable: they are
// sequential). Every delivery gets one now; `bare_url` marks those that existed before, so their
// token-less URL keeps working while they have a secret (the secret authenticates them, as it
// always did). A delivery without a secret answers only at its tokened URL.
import crypto from 'node:crypto';
import type { Knex } from 'knex';

const newPostbackToken = () => crypto.randomBytes(24).toString('base64url');

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('deliveries', (t) => {
    t.string('postback_token', 64).nullable();
    t.boolean('bare_url').notNullable().defaultTo(false);
  });
  const ids = (await knex('deliveries').select('id')).map((r) => Number(r.id));
  for (const id of ids)
    await knex('deliveries')
      .where('id', id)
      .update({ postback_token: newPostbackToken(), bare_url: true });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('deliveries', (t) => {
    t.dropColumn('bare_url');
    t.dropColumn('postback_token');
  });
}
