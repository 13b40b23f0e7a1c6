// PostgreSQL: the idempotency claim of a request that runs in a transaction, in one statement
// inside that transaction (spec/DECISIONS.md, "The idempotency claim inside the transaction").
// Two transaction-scoped advisory locks stand for the running request, where a committed lock row
// did (its own commit, its own WAL flush): the key's, which one request at a time holds, and the
// key with the body's hash, which says to a request refused the key's lock whether the one running
// has its body (409 idempotency_in_progress) or another (422 idempotency_key_reused). The body's
// lock is taken first: whoever holds the key's lock then holds its body's too, or waits the moment
// a refused twin needs to let it go. Then the key's record is read by a statement of its own:
// VOLATILE, so it reads with a snapshot taken after the lock, and sees the record of a request that
// committed and let the lock go after this statement began.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  const { rows } = await knex.raw('SELECT current_schema() AS s');
  const schema = `"${String(rows[0].s).replace(/"/g, '""')}"`;
  await knex.raw(`
    CREATE FUNCTION idempotency_claim(p_credential integer, p_key text, p_hash text,
      p_forgotten text, OUT held boolean, OUT same_body boolean, OUT record json)
    LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      -- The body's hash has a fixed length: neither text can be another key's.
      k text := current_schema() || ':idempotency:' || p_credential || ':' || p_key;
      b text := current_schema() || ':idempotency-body:' || p_credential || ':' || p_hash || p_key;
    BEGIN
      same_body := NOT pg_try_advisory_xact_lock(hashtextextended(b, 0));
      held := pg_try_advisory_xact_lock(hashtextextended(k, 0));
      IF held AND same_body THEN
        PERFORM pg_advisory_xact_lock(hashtextextended(b, 0));
      END IF;
      IF held THEN -- a record older than 48 h is forgotten: the key is a new request
        DELETE FROM ${schema}.idempotency_keys
         WHERE credential_id = p_credential AND key = p_key AND created_at <= p_forgotten;
      END IF;
      SELECT row_to_json(r) INTO record FROM ${schema}.idempotency_keys r
       WHERE r.credential_id = p_credential AND r.key = p_key;
    END $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw('DROP FUNCTION IF EXISTS idempotency_claim(integer, text, text, text)');
}
