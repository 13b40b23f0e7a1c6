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

// Request ids are minted on every response; slicing a pooled random buffer avoids a randomBytes
// call (a few microseconds each) per request.
let pool = Buffer.alloc(0);
let offset = 0;
export function newRequestId(): string {
  if (offset + 12 > pool.length) {
    pool = crypto.randomBytes(12 * 512);
    offset = 0;
  }
  offset += 12;
  return 'req_' + pool.toString('hex', offset - 12, offset);
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
