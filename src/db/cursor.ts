// Opaque, HMAC-signed cursors carrying the list they belong to (its name and account), the sort, a
// hash of the filters, the boundary row's sort key, the direction and the issue time. Altered, for
// another list, account, sort or filters, or older than 24 h: invalid_cursor.
import crypto, { type KeyObject } from 'node:crypto';
import { AppError } from '../errors.ts';
import type { Clock } from '../clock.ts';
import { DAY } from '../clock.ts';
import { keyObject } from '../domain/shared/keys.ts';

export interface CursorPayload {
  /** The list and account it pages through, e.g. `users:42`: never valid on another. */
  scope: string;
  sort: string;
  filters: string;
  key: unknown[];
  dir: 'next' | 'prev';
}

export class CursorCodec {
  private readonly key: KeyObject;
  private readonly clock: Clock;
  constructor(key: Buffer, clock: Clock) {
    this.key = keyObject(key);
    this.clock = clock;
  }

  private sign(body: string): string {
    return crypto.createHmac('sha256', this.key).update(body).digest('base64url');
  }

  encode(p: CursorPayload): string {
    const body = Buffer.from(
      JSON.stringify([p.scope, p.sort, p.filters, p.key, p.dir, this.clock.now().getTime()]),
    ).toString('base64url');
    return `${body}.${this.sign(body)}`;
  }

  decode(cursor: string, scope: string, sort: string, filters: string): CursorPayload {
    const invalid = () => new AppError('invalid_cursor', { details: [] });
    const parts = cursor.split('.');
    if (parts.length !== 2) throw invalid();
    const [body, sig] = parts as [string, string];
    if (!body || !sig) throw invalid();
    const expected = Buffer.from(this.sign(body));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !crypto.timingSafeEqual(expected, given))
      throw invalid();
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      throw invalid();
    }
    if (!Array.isArray(parsed) || parsed.length !== 6) throw invalid();
    const [sc, s, f, key, dir, issued] = parsed as [
      string,
      string,
      string,
      unknown[],
      string,
      number,
    ];
    if (sc !== scope || s !== sort || f !== filters) throw invalid();
    if (!Array.isArray(key) || (dir !== 'next' && dir !== 'prev')) throw invalid();
    if (typeof issued !== 'number' || this.clock.now().getTime() - issued > DAY) throw invalid();
    return { scope, sort: s, filters: f, key, dir };
  }
}

/** Stable hash of the list filters, so a cursor cannot be replayed against other filters. */
export function filtersHash(filters: Record<string, unknown>): string {
  const entries = Object.entries(filters)
    .filter(([, v]) => v !== undefined && v !== null)
    .sort(([a], [b]) => a.localeCompare(b));
  return crypto.hash('sha256', JSON.stringify(entries), 'base64url').slice(0, 16);
}
