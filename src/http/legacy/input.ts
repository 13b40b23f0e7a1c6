// Reading legacy requests: JSON bodies checked against the generation's document, and the path
// values that name a student. Legacy clients often omit Content-Type, so a body is read as JSON
// whatever the header says.
import type { Context } from 'koa';
import { AppError, isAppError } from '../../errors.ts';
import { negotiateLocale } from '../../i18n/messages.ts';
import type { UserRef } from '../../domain/users/service.ts';
import { fromId } from '../../domain/shared/ids.ts';
import { parseJson, readBody } from '../body.ts';
import { legacyContract, type LegacyContract } from './contract.ts';

/** The Email rule of the legacy documents (word for word the v3 contract's; a test keeps it so). */
const EMAIL = new RegExp(
  legacyContract('v1').doc.components.schemas.Email['x-format-pattern'],
  'i',
);

export const isEmail = (s: string): boolean => s.length <= 320 && EMAIL.test(s);

/** The body, checked against the operation's schema; an empty one only where it is optional. */
export async function legacyBody<T>(
  ctx: Context,
  contract: LegacyContract,
  operationId: string,
): Promise<T> {
  let body: unknown;
  try {
    body = parseJson(await readBody(ctx.req));
  } catch (err) {
    if (isAppError(err) && err.code === 'payload_too_large') throw err;
    // Unreadable JSON is a bad body like any other: 422 on the legacy generations.
    if (isAppError(err)) throw new AppError(err.code, { status: 422 });
    throw err;
  }
  return contract.checkBody(operationId, body, negotiateLocale(ctx.get('accept-language'))) as T;
}

/**
 * v1 `usuario_email_id` and a plain v2 identifier: a valid email is looked up by email;
 * anything else by its digits, as the id or the document.
 */
export function plainRef(value: string): UserRef {
  if (isEmail(value)) return { email: value };
  return { idOrDocument: value.includes('\0') ? '' : value };
}

/** v2 `identifier`: `id:<ID>`, `email:<email>`, `doc:<document>` or a plain value. */
export function v2Ref(value: string): UserRef {
  const m = /^(id|email|doc):(.*)$/s.exec(value);
  if (!m) return plainRef(value);
  const [, kind, rest] = m as unknown as [string, string, string];
  if (kind === 'email') return isEmail(rest) ? { email: rest } : { id: null };
  if (kind === 'doc') return { document: rest.includes('\0') ? '' : rest };
  return { id: fromId(rest) };
}
