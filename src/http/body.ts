// Reads a request body as a stream with a hard byte limit (never buffering past it), then checks
// UTF-8 and JSON nesting before parsing. Each failure has its own error code.
import type { IncomingMessage } from 'node:http';
import { AppError } from '../errors.ts';

export const MAX_BODY_BYTES = 1024 * 1024;
export const MAX_JSON_DEPTH = 16;

/** The client went away before its body arrived: nothing to answer, and not our failure. */
export class ClientClosedRequest extends Error {
  /** What the log and the audit trail record (nginx's "client closed request"). */
  static readonly STATUS = 499;
  constructor() {
    super('client closed the request before its body was read');
  }
}

/**
 * Marks the request as closed by its client when `err` says so: the request log line says
 * `client_closed` at info level and the status is 499, never an error line with a stack or a 500.
 * Every reader of a body (v3, legacy, OAuth forms, postbacks) goes through this.
 */
export function closedByClient(ctx: { status: number; state: Record<string, any> }, err: unknown) {
  if (!(err instanceof ClientClosedRequest)) return false;
  ctx.status = ClientClosedRequest.STATUS;
  ctx.state.clientClosed = true;
  return true;
}

export async function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer> {
  // Gone before we started reading (while the caller was authenticated, say): its 'close' has
  // already fired and would never reach the listeners below, leaving the request pending forever.
  if (req.destroyed) throw new ClientClosedRequest();
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume(); // drain without keeping the bytes, so the connection can answer
    throw new AppError('payload_too_large');
  }
  // Listeners, not `for await`: leaving an async iterator destroys the socket, and the client
  // would see a reset instead of the 413. Past the limit the rest is drained and discarded.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onClose);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.resume();
        reject(new AppError('payload_too_large'));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    // An error on the request stream is the connection failing under it (ECONNRESET "aborted"),
    // and a close before the end is the client hanging up.
    const onClose = () => {
      cleanup();
      reject(new ClientClosedRequest());
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onClose);
    req.on('close', onClose);
  });
}

/**
 * The request says its body is JSON: exactly one Content-Type header, `application/json` with any
 * parameters (not `application/jsonp`). Two Content-Type headers are ambiguous, never one picked.
 */
export function isJsonRequest(req: IncomingMessage): boolean {
  const types = req.headersDistinct['content-type'];
  return types?.length === 1 && /^application\/json\s*(;|$)/i.test(types[0]!);
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Nesting depth of a JSON text, scanned without parsing so a hostile body cannot blow the stack. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) max = depth;
    } else if (c === 125 || c === 93) depth--;
  }
  return max;
}

/** Decodes and parses a JSON body; an empty body is `undefined`. */
export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  let text: string;
  try {
    text = decoder.decode(raw);
  } catch {
    throw new AppError('invalid_utf8');
  }
  if (jsonDepth(text) > MAX_JSON_DEPTH) throw new AppError('json_too_deep');
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('malformed_json');
  }
}
