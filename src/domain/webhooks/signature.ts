// Standard Webhooks signatures (https://www.standardwebhooks.com): `webhook-signature` is a
// space-separated list of `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, one per active
// secret, keyed with the secret's base64 part (after `whsec_`).
import crypto from 'node:crypto';
import { TextKeys } from '../shared/keys.ts';

export const SECRET_PREFIX = 'whsec_';

/** 32 random bytes, as Standard Webhooks libraries expect them (`whsec_` + base64). */
export function newSigningSecret(): string {
  return SECRET_PREFIX + crypto.randomBytes(32).toString('base64');
}

/** Secrets in use, each decoded once (the same few sign every attempt of an endpoint). */
const keys = new TextKeys((secret) => Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64'));

export function sign(secret: string, msgId: string, timestamp: number, body: string): string {
  const key = keys.get(secret);
  const mac = crypto.createHmac('sha256', key).update(`${msgId}.${timestamp}.${body}`);
  return `v1,${mac.digest('base64')}`;
}

/** The `webhook-*` headers of one attempt. */
export function signedHeaders(
  secrets: string[],
  msgId: string,
  timestamp: number,
  body: string,
): Record<string, string> {
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => sign(s, msgId, timestamp, body)).join(' '),
  };
}
