// What every database module may import without importing the factory: the handle types and the
// engine test. (src/db/knex.ts builds the handles; src/db/statements.ts needs only these.)
import type { Knex } from 'knex';

export type Db = Knex;
export type Tx = Knex | Knex.Transaction;

export function isPostgres(db: Tx): boolean {
  return db.client.config.client === 'pg';
}
