// What every gateway's parser produces, and the field checks they share.
import { AppError, type ErrorDetail } from '../../errors.ts';

/** A sale's status as every gateway's postback is normalized to. */
export const SALE_STATUSES = [
  'approved',
  'refunded',
  'canceled',
  'chargeback',
  'trial',
  'subscription_active',
  'subscription_canceled',
] as const;
export type SaleStatus = (typeof SALE_STATUSES)[number];

export interface PostbackClient {
  name: string | null;
  email: string | null;
  doc: string | null;
  phone: string | null;
}

/** One postback, normalized. */
export interface SaleEvent {
  transactionId: string;
  recurrenceId: string | null;
  status: SaleStatus;
  productIds: string[];
  client: PostbackClient;
}

/** A postback the gateway sends that says nothing about access (a boleto printed...). */
export interface IgnoredPostback {
  ignored: string;
}

export class PayloadProblems {
  readonly details: ErrorDetail[] = [];
  add(field: string, code: string, message: string): void {
    this.details.push({ field, code, message });
  }
  throwIfAny(): void {
    if (this.details.length) throw new AppError('validation_failed', { details: this.details });
  }
}

const EMAIL =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$/;

/** A gateway id: a non-blank string or an integer, as text (at most 200 characters). */
export function idText(v: unknown, field: string, p: PayloadProblems, required = true) {
  if (v === undefined || v === null) {
    if (required) p.add(field, 'required', 'This field is required.');
    return null;
  }
  const s = typeof v === 'number' && Number.isInteger(v) ? String(v) : v;
  if (typeof s !== 'string' || !s.trim() || s.length > 200) {
    p.add(field, 'invalid', 'Must be a non-blank string of at most 200 characters.');
    return null;
  }
  return s.trim();
}

/** Optional text, trimmed; blank is null. */
export function optionalText(v: unknown, field: string, max: number, p: PayloadProblems) {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length > max) {
    p.add(field, 'invalid', `Must be a string of at most ${max} characters.`);
    return null;
  }
  return v.trim() || null;
}

export function emailText(v: unknown, field: string, p: PayloadProblems) {
  if (typeof v !== 'string' || v.length > 320 || !EMAIL.test(v.trim())) {
    p.add(field, 'invalid_email', 'Must be a valid email address.');
    return null;
  }
  return v.trim();
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
