// Signed URLs of the local store: an HMAC over the method, the path and the expiry, so a URL works
// for one action on one object until it expires, and a changed character anywhere refuses it.
import crypto, { type KeyObject } from 'node:crypto';
import { keyObject } from '../../shared/keys.ts';

export class UrlSigner {
  private readonly key: KeyObject;
  private readonly baseUrl: string;
  constructor(key: Buffer, baseUrl: string) {
    this.key = keyObject(key);
    this.baseUrl = baseUrl;
  }

  url(method: 'GET' | 'PUT', path: string, expiresAt: Date): string {
    const expires = String(Math.floor(expiresAt.getTime() / 1000));
    return `${this.baseUrl}${path}?expires=${expires}&signature=${this.sign(method, path, expires)}`;
  }

  /** Whether the URL's signature holds and it has not expired at `now`. */
  verify(method: string, path: string, query: Record<string, unknown>, now: Date): boolean {
    const { expires, signature } = query;
    if (typeof expires !== 'string' || typeof signature !== 'string') return false;
    if (!/^[0-9]{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(signature)) return false;
    const expected = Buffer.from(this.sign(method, path, expires), 'hex');
    if (!crypto.timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return false;
    return Number(expires) * 1000 > now.getTime();
  }

  private sign(method: string, path: string, expires: string): string {
    return crypto
      .createHmac('sha256', this.key)
      .update(`${method}\n${path}\n${expires}`)
      .digest('hex');
  }
}
