import crypto from 'node:crypto';

/** v3 exposes integer primary keys as decimal strings. */
export const toId = (n: number | string | null | undefined): string | null =>
  n === null || n === undefined ? null : String(n);

/** Primary keys are 32-bit on PostgreSQL (`serial`); no record ever has a larger id. */
export const MAX_ID = 2147483647;

/**
 * Parses a v3 id; anything that is not a positive integer a record can have is simply "not found"
 * (a larger one overflowed PostgreSQL's integer columns and answered 500).
 */
export const fromId = (s: string | undefined): number | null => {
  if (!s || !/^[1-9][0-9]{0,9}$/.test(s)) return null;
  const n = Number(s);
  return n <= MAX_ID ? n : null;
};

// Random bytes are sliced from a pooled buffer: a randomBytes call costs a few microseconds, and
// several ids are minted per request. Each byte is handed out once.
const POOL_SIZE = 8192;
let pool = Buffer.alloc(0);
let offset = 0;
function take(n: number): [Buffer, number] {
  if (offset + n > pool.length) {
    pool = crypto.randomBytes(Math.max(POOL_SIZE, n));
    offset = 0;
  }
  offset += n;
  return [pool, offset - n];
}

/** `bytes` random bytes as hex. */
export function randomHex(bytes: number): string {
  const [buf, at] = take(bytes);
  return buf.toString('hex', at, at + bytes);
}

export const newRevision = (): string => randomHex(8);

/**
 * Request ids, minted on every response: `req_`, 12 hex digits of the millisecond, 12 random.
 * Time-ordered, so the audit trail's unique index grows at its right edge: random ids dirtied a
 * random index page per entry, which multiplied the bytes every audit commit wrote.
 */
export function newRequestId(now = Date.now()): string {
  return 'req_' + now.toString(16).padStart(12, '0') + randomHex(6);
}

// crypto.hash: one call, no Hash object (a third of createHash's cost on a short string).
export const sha256 = (s: string): string => crypto.hash('sha256', s, 'hex');

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random base62 string with `bytes` bytes of entropy (rejection sampling keeps it unbiased). */
export function randomBase62(bytes: number): string {
  return randomBase62Chars(Math.ceil((bytes * 8) / Math.log2(62)));
}

function randomBase62Chars(length: number): string {
  let out = '';
  while (out.length < length) {
    const [buf, at] = take(length * 2);
    for (let i = at; i < at + length * 2 && out.length < length; i++) {
      if (buf[i]! < 248) out += BASE62[buf[i]! % 62];
    }
  }
  return out;
}

/**
 * A 43-character base62 secret that a unique index looks up (the sign-in token): 8 digits of the
 * millisecond it was made, then 35 random ones (208 bits). Time-ordered for the same reason as
 * request ids: a random token (or one ordered only by the second: thousands of inserts a second
 * spread over dozens of pages) dirtied a page of its index on every insert.
 */
export function timeOrderedToken(now = Date.now()): string {
  let ms = Math.floor(now);
  let prefix = '';
  for (let i = 0; i < 8; i++) {
    prefix = BASE62[ms % 62] + prefix;
    ms = Math.floor(ms / 62);
  }
  return prefix + randomBase62Chars(35);
}
