// Indexes every write request pays for (each b-tree an insert touches is a page written at its
// commit):
// - The retention sweeps of events and idempotency records walk the primary key
//   (src/db/purge.ts), as the audit sweep does, so their created_at indexes go.
// - The lookup by document (CPF) only ever asks for a document, so its index keeps only the users
//   that have one.
// - The deliveries waiting for a free slot of their endpoint are found by an index of their own:
//   the due_at index walked every endpoint's due rows, so one endpoint's backlog slowed the others.
//   The sweep's due_at index leaves the waiting ones out for the same reason.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.dropIndex(['created_at'], 'events_created_at_index');
  });
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropIndex(['created_at'], 'idempotency_keys_created_at_index');
  });
  await knex.schema.alterTable('users', (t) => {
    t.dropIndex(['account_id', 'document'], 'users_account_document_index');
  });
  await knex.schema.alterTable('users', (t) => {
    t.index(['account_id', 'document'], 'users_account_document_index', {
      predicate: knex.whereNotNull('document'),
    });
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.index(['endpoint_id', 'waiting', 'due_at', 'id'], 'webhook_deliveries_waiting_index');
    t.dropIndex(['due_at'], 'webhook_deliveries_due_at_index');
    t.index(['waiting', 'due_at'], 'webhook_deliveries_waiting_due_at_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropIndex(['waiting', 'due_at'], 'webhook_deliveries_waiting_due_at_index');
    t.index(['due_at'], 'webhook_deliveries_due_at_index');
    t.dropIndex(['endpoint_id', 'waiting', 'due_at', 'id'], 'webhook_deliveries_waiting_index');
  });
  await knex.schema.alterTable('users', (t) => {
    t.dropIndex(['account_id', 'document'], 'users_account_document_index');
  });
  await knex.schema.alterTable('users', (t) => {
    t.index(['account_id', 'document'], 'users_account_document_index');
  });
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.index(['created_at'], 'idempotency_keys_created_at_index');
  });
  await knex.schema.alterTable('events', (t) => {
    t.index(['created_at'], 'events_created_at_index');
  });
}
