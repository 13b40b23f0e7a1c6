// Every answer that is not 2xx becomes an ApiError: the v3 envelope's fields as properties, so
// callers branch on `code` (stable) rather than on `message` (localized). It also keeps the
// envelope's `error` member as sent, so `result.error.error.code` still reads as before.
import type { components } from './types.ts';

export type ErrorBody = components['schemas']['Error']['error'];
export type ErrorDetail = components['schemas']['ErrorDetail'];

export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  /** Stable machine-readable code (`not_found`, `validation_failed`, ...). */
  readonly code: string;
  readonly details: ErrorDetail[];
  /** Equals the X-Request-Id response header: quote it to support. */
  readonly request_id: string;
  /** On 429: seconds to wait before retrying. */
  readonly retry_after_seconds: number | undefined;
  /** The envelope's `error` member, as the server sent it. */
  readonly error: ErrorBody;

  constructor(status: number, error: ErrorBody) {
    super(error.message);
    this.status = status;
    this.code = error.code;
    this.details = error.details ?? [];
    this.request_id = error.request_id;
    this.retry_after_seconds = error.retry_after_seconds;
    this.error = error;
  }

  /** The error of an answer: its v3 envelope, else (a proxy's page, an empty body) the status. */
  static from(response: Response, body: unknown): ApiError {
    const error = (body as { error?: ErrorBody } | null)?.error;
    if (typeof error?.code === 'string') return new ApiError(response.status, error);
    const text = typeof body === 'string' ? body.trim().slice(0, 200) : '';
    return new ApiError(response.status, {
      code: 'http_error',
      message: text || `HTTP ${response.status} ${response.statusText}`.trim(),
      request_id: response.headers.get('x-request-id') ?? '',
      details: [],
    });
  }
}

/** The data of a call, or its ApiError thrown: `const user = unwrap(await api.GET(...)).data`. */
export function unwrap<R extends { data?: unknown; error?: unknown; response: Response }>(
  result: R,
): NonNullable<R['data']> {
  if (result.error !== undefined) {
    throw result.error instanceof ApiError
      ? result.error
      : ApiError.from(result.response, result.error);
  }
  return result.data as NonNullable<R['data']>;
}
