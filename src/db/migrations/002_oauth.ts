// OAuth authorization server and administrator sign-in: signing keys (private parts encrypted with
// SECRETS_KEY), browser sessions, authorization codes and tokens. Secrets are stored as SHA-256
// hashes only; the JWT access tokens are kept by `jti` so they can be revoked.
import type { Knex } from 'knex';

const TS = 30;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('oauth_signing_keys', (t) => {
    t.string('kid', 64).primary();
    t.string('alg', 10).notNullable();
    t.text('public_jwk').notNullable();
    t.text('private_jwk_sealed').notNullable();
    t.string('created_at', TS).notNullable();
    // A retired key no longer signs; it verifies until the last token it signed has expired.
    t.string('retired_at', TS).nullable();
  });

  await knex.schema.createTable('admin_sessions', (t) => {
    t.increments('id');
    t.string('token_hash', 64).notNullable().unique();
    t.integer('admin_id').notNullable().references('administrators.id').onDelete('CASCADE');
    // 'two_factor' after the password, 'complete' after the TOTP code.
    t.string('stage', 20).notNullable();
    // TOTP time step accepted for this session: a code is never accepted twice.
    t.integer('totp_step').nullable();
    t.string('created_at', TS).notNullable();
    t.string('expires_at', TS).notNullable();
    t.string('ended_at', TS).nullable();
    t.index(['admin_id']);
  });

  await knex.schema.createTable('oauth_codes', (t) => {
    t.string('code_hash', 64).primary();
    t.string('client_id', 100).notNullable();
    t.string('redirect_uri', 300).notNullable();
    t.string('code_challenge', 128).notNullable();
    t.integer('admin_id').notNullable();
    t.integer('session_id').notNullable();
    t.string('family_id', 32).notNullable();
    t.string('created_at', TS).notNullable();
    t.string('expires_at', TS).notNullable();
    t.string('used_at', TS).nullable();
  });

  await knex.schema.createTable('oauth_refresh_tokens', (t) => {
    t.string('token_hash', 64).primary();
    t.string('family_id', 32).notNullable();
    t.integer('admin_id').notNullable();
    t.string('client_id', 100).notNullable();
    t.integer('session_id').notNullable();
    t.string('created_at', TS).notNullable();
    t.string('expires_at', TS).notNullable();
    // Set when exchanged: presenting it again is reuse.
    t.string('used_at', TS).nullable();
    t.string('revoked_at', TS).nullable();
    t.index(['admin_id', 'client_id']);
    t.index(['family_id']);
  });

  await knex.schema.createTable('oauth_access_tokens', (t) => {
    t.string('jti', 64).primary();
    t.string('family_id', 32).notNullable();
    t.integer('admin_id').notNullable();
    t.string('client_id', 100).notNullable();
    t.integer('session_id').notNullable();
    t.string('created_at', TS).notNullable();
    t.string('expires_at', TS).notNullable();
    t.string('revoked_at', TS).nullable();
    t.index(['admin_id', 'client_id']);
    t.index(['family_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'oauth_access_tokens',
    'oauth_refresh_tokens',
    'oauth_codes',
    'admin_sessions',
    'oauth_signing_keys',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
