// Accounts, credentials, administrators, legacy keys, users, tags, idempotency and audit.
// Timestamps are ISO 8601 UTC strings on both engines (sortable, no driver date parsing).
import type { Knex } from 'knex';

const TS = 30;

export async function up(knex: Knex): Promise<void> {
  // Server-wide random keys (cursor signing), shared by every instance on the same database.
  await knex.schema.createTable('server_keys', (t) => {
    t.string('name', 50).primary();
    t.string('value', 200).notNullable();
    t.string('created_at', TS).notNullable();
  });

  // rate-limiter-flexible's PostgreSQL store (its own layout); SQLite keeps limits in memory.
  if (knex.client.config.client === 'pg') {
    await knex.schema.createTable('rate_limits', (t) => {
      t.string('key', 255).primary();
      t.integer('points').notNullable().defaultTo(0);
      t.bigInteger('expire').nullable();
    });
  }

  await knex.schema.createTable('accounts', (t) => {
    t.increments('id');
    t.string('name', 200).notNullable();
    t.boolean('sandbox').notNullable().defaultTo(false);
    t.string('status', 20).notNullable().defaultTo('active');
    t.integer('replica_of').nullable().references('accounts.id');
    t.string('created_at', TS).notNullable();
  });

  await knex.schema.createTable('credentials', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('name', 200).notNullable();
    t.string('secret_hash', 64).notNullable().unique();
    t.string('secret_last4', 4).notNullable();
    t.string('environment', 10).notNullable();
    t.string('status', 20).notNullable();
    t.string('auth_mode', 20).notNullable();
    t.text('permissions').notNullable();
    t.integer('issuer_id').nullable().references('credentials.id');
    t.string('expires_at', TS).nullable();
    t.string('last_used_at', TS).nullable();
    t.string('revoked_at', TS).nullable();
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.index(['account_id', 'id']);
  });

  await knex.schema.createTable('administrators', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('email', 320).notNullable();
    t.string('email_lower', 320).notNullable().unique();
    t.string('password_hash', 200).notNullable();
    t.string('totp_secret', 64).notNullable();
    t.string('status', 20).notNullable().defaultTo('active');
    t.string('created_at', TS).notNullable();
  });

  await knex.schema.createTable('credential_administrators', (t) => {
    t.integer('credential_id').notNullable().references('credentials.id').onDelete('CASCADE');
    t.integer('admin_id').notNullable().references('administrators.id').onDelete('CASCADE');
    t.string('created_at', TS).notNullable();
    t.primary(['credential_id', 'admin_id']);
  });

  await knex.schema.createTable('legacy_keys', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('key_hash', 64).notNullable().unique();
    t.string('created_at', TS).notNullable();
  });

  await knex.schema.createTable('users', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('name', 200).notNullable();
    t.string('email', 320).notNullable();
    t.string('email_lower', 320).notNullable();
    t.string('phone', 40).nullable();
    t.string('document', 20).nullable();
    t.string('job_title', 200).nullable();
    t.string('company_name', 200).nullable();
    t.string('company_size', 50).nullable();
    t.boolean('free').notNullable().defaultTo(false);
    t.integer('points').notNullable().defaultTo(0);
    t.string('auto_login_token', 64).notNullable();
    t.text('utm').notNullable();
    t.string('started_at', TS).nullable();
    t.string('last_access_at', TS).nullable();
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.unique(['account_id', 'email_lower']);
    t.index(['account_id', 'created_at', 'id']);
  });

  await knex.schema.createTable('tags', (t) => {
    t.increments('id');
    t.integer('account_id').notNullable().references('accounts.id');
    t.string('name', 100).notNullable();
    t.string('name_lower', 100).notNullable();
    t.string('revision', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('updated_at', TS).notNullable();
    t.unique(['account_id', 'name_lower']);
  });

  await knex.schema.createTable('user_tags', (t) => {
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.integer('tag_id').notNullable().references('tags.id').onDelete('CASCADE');
    t.string('created_at', TS).notNullable();
    t.primary(['user_id', 'tag_id']);
    t.index(['tag_id']);
  });

  await knex.schema.createTable('idempotency_keys', (t) => {
    t.increments('id');
    t.integer('credential_id').notNullable();
    t.string('key', 128).notNullable();
    t.string('request_hash', 64).notNullable();
    t.string('state', 20).notNullable();
    t.string('owner', 64).notNullable();
    t.string('locked_at', TS).notNullable();
    t.integer('response_status').nullable();
    t.text('response_headers').nullable();
    t.text('response_body').nullable();
    t.boolean('replayable').notNullable().defaultTo(true);
    t.string('created_at', TS).notNullable();
    t.unique(['credential_id', 'key']);
  });

  await knex.schema.createTable('audit_entries', (t) => {
    t.increments('id');
    t.string('request_id', 64).notNullable().unique();
    t.integer('account_id').nullable();
    t.integer('credential_id').nullable();
    t.integer('admin_id').nullable();
    t.string('method', 10).notNullable();
    t.string('route', 300).nullable();
    t.string('operation_id', 100).nullable();
    t.string('path', 2000).notNullable();
    t.integer('status').notNullable();
    t.integer('duration_ms').notNullable();
    t.string('ip', 64).nullable();
    t.string('created_at', TS).notNullable();
    t.index(['credential_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'audit_entries',
    'idempotency_keys',
    'user_tags',
    'tags',
    'users',
    'legacy_keys',
    'credential_administrators',
    'administrators',
    'credentials',
    'accounts',
    'server_keys',
    'rate_limits',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
