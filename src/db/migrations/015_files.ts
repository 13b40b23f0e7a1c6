// Files (the bytes live in the store: local disk or S3; a row says where and what they are) and the
// uploads that make them: an S3-style multipart upload whose parts the client sends straight to
// the store through signed URLs. Sizes are 64-bit (an attachment may reach 5 GiB).
import type { Knex } from 'knex';

const TS = 30;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('files', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('purpose', 20).notNullable();
    t.string('filename', 255).notNullable();
    t.string('content_type', 255).notNullable();
    t.bigInteger('size').notNullable();
    t.string('sha256', 64).notNullable();
    // Where the store keeps the bytes (a path under FILES_DIR, or an object key).
    t.string('storage_key', 200).notNullable();
    // available, then deleted (the bytes are gone; the row stays so ids are never reused).
    t.string('status', 20).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('deleted_at', TS).nullable();
    t.index(['account_id', 'id']);
  });

  await knex.schema.createTable('uploads', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('purpose', 20).notNullable();
    t.string('filename', 255).notNullable();
    t.string('content_type', 255).notNullable();
    t.bigInteger('size').notNullable();
    t.string('sha256', 64).notNullable();
    t.integer('part_size').notNullable();
    t.integer('parts_count').notNullable();
    // pending -> completed (file_id) | failed (failure) | canceled | expired.
    t.string('status', 20).notNullable();
    t.string('storage_key', 200).notNullable();
    // The store's own multipart id (S3's UploadId; local disk: the key).
    t.string('storage_upload_id', 1024).notNullable();
    t.integer('file_id').nullable().references('files.id');
    t.text('failure').nullable();
    t.string('revision', 32).notNullable();
    t.string('expires_at', TS).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.index(['account_id', 'id']);
    // The expiry sweep reads pending uploads by their deadline.
    t.index(['status', 'expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('uploads');
  await knex.schema.dropTable('files');
}
