import crypto from 'node:crypto';

/** v3 exposes integer primary keys as decimal strings. */
export const toId = (n: number | string | null | undefined): string | null =>
  n === null || n === undefined ? null : String(n);

/** Parses a v3 id; anything that is not a positive integer is simply "not found". */
export const fromId = (s: string | undefined): number | null => {
  if (!s || !/^[1-9][0-9]{0,15}$/.test(s)) return null;
  return Number(s);
};

export const newRevision = (): string => crypto.randomBytes(8).toString('hex');

// Request ids are minted on every response: `req_`, 12 hex digits of the millisecond, 12 random.
// Time-ordered, so the audit trail's unique index grows at its right edge: random ids dirtied a
// random index page per entry, which multiplied the bytes every audit commit wrote. Slicing a
// pooled random buffer avoids a randomBytes call (a few microseconds each) per request.
let pool = Buffer.alloc(0);
let offset = 0;
export function newRequestId(now = Date.now()): string {
  if (offset + 6 > pool.length) {
    pool = crypto.randomBytes(6 * 1024);
    offset = 0;
  }
  offset += 6;
  return 'req_' + now.toString(16).padStart(12, '0') + pool.toString('hex', offset - 6, offset);
}

export const sha256 = (s: string): string => crypto.createHash('sha256').update(s).digest('hex');

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random base62 string with `bytes` bytes of entropy (rejection sampling keeps it unbiased). */
export function randomBase62(bytes: number): string {
  const length = Math.ceil((bytes * 8) / Math.log2(62));
  let out = '';
  while (out.length < length) {
    for (const b of crypto.randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}
