import crypto from 'node:crypto';
import type { Db } from './knex.ts';

/**
 * A random server key, created once and shared by every instance on the same database. Read
 * first: every process (the admin CLI too) asks for its keys at start, and on SQLite an insert
 * that would be ignored still takes the write lock, which a busy server can hold past
 * busy_timeout ('database is locked' from `npm run admin` during a sandbox scenario).
 */
export async function serverKey(db: Db, name: string, now: string): Promise<Buffer> {
  const read = async () => (await db('server_keys').where('name', name).first('value'))?.value;
  let value: string | undefined = await read();
  if (value === undefined) {
    await db('server_keys')
      .insert({ name, value: crypto.randomBytes(32).toString('hex'), created_at: now })
      .onConflict('name')
      .ignore();
    value = await read();
  }
  return Buffer.from(value!, 'hex');
}
