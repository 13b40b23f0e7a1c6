// uploads.joined_at: when the store joined the upload's parts into its object. A completion whose
// read-back fails after that cannot start again from the parts (S3 keeps none once joined); the
// marker tells a retried completion to check the joined object instead of refusing it.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('uploads', (t) => {
    t.string('joined_at', 30).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('uploads', (t) => {
    t.dropColumn('joined_at');
  });
}
