// A delivery's postback secret: stored as its SHA-256, compared in constant time, never shown.
import crypto from 'node:crypto';
import type { Delivery } from './deliveries-repo.ts';

export const hashSecret = (secret: string) => crypto.hash('sha256', secret, 'hex');

/** Compares a presented secret with the stored hash in constant time. */
export function secretMatches(d: Delivery, presented: string | undefined): boolean {
  if (d.secretHash === null) return true;
  if (presented === undefined) return false;
  const a = Buffer.from(hashSecret(presented), 'hex');
  return crypto.timingSafeEqual(a, Buffer.from(d.secretHash, 'hex'));
}
