import crypto from 'node:crypto';
import type { Db } from './knex.ts';

/** A random server key, created once and shared by every instance on the same database. */
export async function serverKey(db: Db, name: string, now: string): Promise<Buffer> {
  await db('server_keys')
    .insert({ name, value: crypto.randomBytes(32).toString('hex'), created_at: now })
    .onConflict('name')
    .ignore();
  const row = await db('server_keys').where('name', name).first('value');
  return Buffer.from(row.value, 'hex');
}
