// A delivery's postback credentials. The secret (X-Postback-Secret) is stored as its SHA-256,
// compared in constant time, never shown but once when we generate it. The token is the
// unguessable part of the postback URL (`/postbacks/{id}/{token}`): the URL is shown in GET, so
// it is stored as is, and compared in constant time.
import crypto from 'node:crypto';
import type { Delivery } from './deliveries-repo.ts';

export const hashSecret = (secret: string) => crypto.hash('sha256', secret, 'hex');

/** 32 random bytes for a generated postback secret (shown once, in the create response). */
export const newPostbackSecret = () => 'pbsec_' + crypto.randomBytes(32).toString('base64url');

/** Where the gateway posts: the id and the unguessable token (ids are sequential). */
export const postbackUrl = (d: Delivery, publicBaseUrl: string) =>
  `${publicBaseUrl}/postbacks/${d.id}/${d.postbackToken}`;

/** 24 random bytes: the postback URL's token. */
export const newPostbackToken = () => crypto.randomBytes(24).toString('base64url');

const sameText = (a: string, b: string) => {
  const [x, y] = [crypto.hash('sha256', a), crypto.hash('sha256', b)].map((h) =>
    Buffer.from(h, 'hex'),
  );
  return crypto.timingSafeEqual(x!, y!);
};

/**
 * Whether the URL names the delivery: its token, or no token at all on a delivery created before
 * tokens that has a secret (the secret authenticates it, as it did before).
 */
export function urlMatches(d: Delivery, token: string | undefined): boolean {
  if (token === undefined) return d.bareUrl && d.secretHash !== null;
  return d.postbackToken !== null && sameText(token, d.postbackToken);
}

/** Compares a presented secret with the stored hash in constant time. */
export function secretMatches(d: Delivery, presented: string | undefined): boolean {
  if (d.secretHash === null) return true;
  if (presented === undefined) return false;
  const a = Buffer.from(hashSecret(presented), 'hex');
  return crypto.timingSafeEqual(a, Buffer.from(d.secretHash, 'hex'));
}
