// Business rejections (sales, enrollments, progress, email), each with a `reason` in its detail
// so clients can tell cases apart without parsing messages.
import { AppError, type ErrorCode } from '../../errors.ts';

/** 422 validation_failed on one body field (`products.0.product_id`). */
export const fieldError = (field: string, code: string, message: string, reason?: string) =>
  new AppError('validation_failed', {
    details: [{ field, code, message, ...(reason ? { reason } : {}) }],
  });

/** Any other rejection, with its reason (and the field, when one is to blame). */
export const rejection = (code: ErrorCode, reason: string, message: string, field?: string) =>
  new AppError(code, {
    details: [{ ...(field ? { field } : {}), code, message, reason }],
  });
