// Keys as node:crypto KeyObjects. Given a Buffer, createHmac and createCipheriv build the key
// anew at every call: on Node 24 an HMAC-SHA256 of 1 KB took ~40 us with a Buffer key and ~6 us
// with a KeyObject (AES-256-GCM of a short secret ~25 us and ~5 us). Keys that live long (the
// SECRETS_KEY, the cursor and URL-signing keys, a webhook endpoint's signing secrets) become
// KeyObjects once.
import crypto, { type KeyObject } from 'node:crypto';

const byBuffer = new WeakMap<Buffer, KeyObject>();

/** The KeyObject of a key held as a Buffer (kept while the Buffer lives; never mutate it). */
export function keyObject(key: Buffer): KeyObject {
  let object = byBuffer.get(key);
  if (!object) byBuffer.set(key, (object = crypto.createSecretKey(key)));
  return object;
}

/** Keys given as text (a webhook secret's base64 part), each decoded and kept once. */
export class TextKeys {
  private readonly keys = new Map<string, KeyObject>();
  private readonly max: number;
  private readonly decode: (text: string) => Buffer;

  constructor(decode: (text: string) => Buffer, max = 1000) {
    this.decode = decode;
    this.max = max;
  }

  get(text: string): KeyObject {
    let key = this.keys.get(text);
    if (!key) {
      // A crude bound: past `max` distinct keys, all are forgotten (rotations are rare).
      if (this.keys.size >= this.max) this.keys.clear();
      this.keys.set(text, (key = crypto.createSecretKey(this.decode(text))));
    }
    return key;
  }
}
