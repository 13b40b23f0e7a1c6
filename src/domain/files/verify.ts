// Completion reads the joined object once and checks it against what the client declared: every
// part's size and SHA-256, the whole file's size and SHA-256, and its type. Streaming: memory
// holds one chunk and the first bytes for type sniffing, whatever the file's size.
import crypto from 'node:crypto';
import { fileTypeFromBuffer, supportedMimeTypes } from 'file-type';

export interface Declared {
  size: number;
  sha256: string;
  partSize: number;
  /** Declared SHA-256 of each part, by number (1-based). */
  partSha256: Map<number, string>;
  contentType: string;
}

export interface Mismatch {
  reason: string;
  message: string;
  field?: string;
}

/** How many leading bytes file-type looks at. */
const SNIFF_BYTES = 4100;

/** The media type without parameters, lower-case (`text/csv; charset=utf-8` -> `text/csv`). */
export const baseType = (t: string) => t.split(';')[0]!.trim().toLowerCase();

const isText = (t: string) => t.startsWith('text/') || t === 'application/json';

export async function verifyBytes(
  body: AsyncIterable<Uint8Array>,
  declared: Declared,
): Promise<Mismatch | null> {
  const type = baseType(declared.contentType);
  const whole = crypto.createHash('sha256');
  let part = crypto.createHash('sha256');
  let partNumber = 1;
  let inPart = 0;
  let total = 0;
  const head: Buffer[] = [];
  let headLength = 0;
  const utf8 = isText(type) ? new TextDecoder('utf-8', { fatal: true }) : null;
  let badPart: Mismatch | null = null;
  let utf8Valid = true;

  const endPart = () => {
    const expected = declared.partSha256.get(partNumber);
    if (!badPart && part.digest('hex') !== expected) badPart = partMismatch(partNumber);
    part = crypto.createHash('sha256');
    partNumber += 1;
    inPart = 0;
  };

  {
    for await (const raw of body) {
      const chunk = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
      whole.update(chunk);
      total += chunk.length;
      if (headLength < SNIFF_BYTES) {
        head.push(chunk.subarray(0, SNIFF_BYTES - headLength));
        headLength += Math.min(chunk.length, SNIFF_BYTES - headLength);
      }
      if (utf8 && utf8Valid) utf8Valid = decodes(utf8, chunk);
      let at = 0;
      while (at < chunk.length) {
        const take = Math.min(chunk.length - at, declared.partSize - inPart);
        part.update(chunk.subarray(at, at + take));
        inPart += take;
        at += take;
        if (inPart === declared.partSize) endPart();
      }
    }
    if (utf8 && utf8Valid) utf8Valid = decodes(utf8);
  }
  if (inPart > 0) endPart();
  if (total !== declared.size) {
    return {
      reason: 'size_mismatch',
      message: `The file has ${total} bytes, not the declared ${declared.size}.`,
      field: 'size',
    };
  }
  if (badPart) return badPart;
  if (whole.digest('hex') !== declared.sha256) {
    return { reason: 'sha256_mismatch', message: 'The file does not have the declared SHA-256.' };
  }
  const wrongType = await sniff(Buffer.concat(head, headLength), type);
  if (wrongType) return wrongType;
  if (!utf8Valid) return { reason: 'invalid_utf8', message: `A ${type} file must be valid UTF-8.` };
  return null;
}

/** Whether the bytes continue valid UTF-8 (no chunk: whether the text ended on a whole character). */
function decodes(decoder: TextDecoder, chunk?: Buffer): boolean {
  try {
    if (chunk) decoder.decode(chunk, { stream: true });
    else decoder.decode();
    return true;
  } catch {
    return false;
  }
}

function partMismatch(n: number): Mismatch {
  return {
    reason: 'part_sha256_mismatch',
    message: `Part ${n} does not have the declared SHA-256.`,
    field: `parts[${n - 1}].sha256`,
  };
}

/**
 * file-type recognises binary formats by their magic bytes, never text. So: bytes it recognises
 * must be of the declared type (or the declared type is the catch-all application/octet-stream);
 * bytes it does not recognise must not be declared as a type it would have recognised. Text
 * types (CSV) are checked as valid UTF-8 above.
 */
async function sniff(head: Buffer, type: string): Promise<Mismatch | null> {
  if (type === 'application/octet-stream') return null;
  const found = await fileTypeFromBuffer(head);
  if (found && found.mime !== type) {
    return {
      reason: 'type_mismatch',
      message: `The bytes are ${found.mime}, not the declared ${type}.`,
      field: 'content_type',
    };
  }
  if (!found && (supportedMimeTypes as ReadonlySet<string>).has(type)) {
    return {
      reason: 'type_mismatch',
      message: `The bytes are not ${type}.`,
      field: 'content_type',
    };
  }
  return null;
}
