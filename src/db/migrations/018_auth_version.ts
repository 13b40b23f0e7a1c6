// PostgreSQL: a version that moves whenever anything authentication reads changes, so that each
// instance can keep credentials in memory and check one row instead of reading them again
// (src/domain/credentials/cache.ts). Triggers, not application code, move it: the admin CLI, the
// API and a hand-written UPDATE all count. A credential's last_used_at alone (refreshed once a
// minute by every instance) does not. The version moves in the writer's transaction, so a reader
// never sees a new version before the change it stands for. SQLite keeps its own row cache
// (src/db/reader.ts) and gets nothing here.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  const { rows } = await knex.raw('SELECT current_schema() AS s');
  const table = `"${String(rows[0].s).replace(/"/g, '""')}".auth_version`;
  await knex.raw(`
    CREATE TABLE auth_version (id integer PRIMARY KEY CHECK (id = 1), version bigint NOT NULL);
    INSERT INTO auth_version VALUES (1, 0);
    CREATE FUNCTION bump_auth_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'UPDATE'
         AND (to_jsonb(OLD) - 'last_used_at') = (to_jsonb(NEW) - 'last_used_at') THEN
        RETURN NULL;
      END IF;
      UPDATE ${table} SET version = version + 1 WHERE id = 1;
      RETURN NULL;
    END $$;
    CREATE TRIGGER credentials_auth_version AFTER UPDATE OR DELETE ON credentials
      FOR EACH ROW EXECUTE FUNCTION bump_auth_version();
    CREATE TRIGGER accounts_auth_version AFTER UPDATE OR DELETE ON accounts
      FOR EACH ROW EXECUTE FUNCTION bump_auth_version();
  `);
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw(`
    DROP TRIGGER IF EXISTS credentials_auth_version ON credentials;
    DROP TRIGGER IF EXISTS accounts_auth_version ON accounts;
    DROP FUNCTION IF EXISTS bump_auth_version();
    DROP TABLE IF EXISTS auth_version;
  `);
}
