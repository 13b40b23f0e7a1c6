// One error model for every generation: domain code throws AppError(code); one middleware per
// surface renders it. The table is the specification's error catalog (code -> HTTP status).
export const ERROR_STATUS = {
  unauthenticated: 401,
  credential_revoked: 401,
  credential_suspended: 401,
  credential_expired: 401,
  ambiguous_credentials: 401,
  human_context_required: 401,
  invalid_access_token: 401,
  instance_blocked: 403,
  instance_unavailable: 403,
  credential_state_unverifiable: 503,
  permission_denied: 403,
  not_found: 404,
  operation_not_catalogued: 503,
  not_acceptable: 406,
  unsupported_media_type: 415,
  payload_too_large: 413,
  malformed_json: 400,
  json_too_deep: 400,
  invalid_utf8: 400,
  validation_failed: 422,
  unknown_field: 422,
  unknown_parameter: 400,
  invalid_cursor: 400,
  method_not_allowed: 405,
  revision_mismatch: 412,
  invalid_transition: 422,
  credential_not_removable: 422,
  delegation_limit_exceeded: 403,
  idempotency_key_required: 422,
  idempotency_key_invalid: 422,
  idempotency_key_reused: 422,
  idempotency_in_progress: 409,
  result_uncertain: 409,
  secret_not_replayable: 409,
  result_not_replayable: 409,
  operation_type_unknown: 422,
  duplicate_item_key: 422,
  operation_backlog_exceeded: 422,
  operation_not_cancelable: 422,
  operation_not_resumable: 422,
  item_invalid: 422,
  too_many_items: 422,
  operation_ownership_lost: 409,
  domain_rule_violation: 422,
  http_error: 400,
  internal_error: 500,
  audit_unavailable: 503,
  rate_limit_exceeded: 429,
  rate_limiter_unavailable: 503,
  state_conflict: 409,
  upload_integrity_mismatch: 422,
  storage_unavailable: 503,
  database_unavailable: 503,
  sandbox_only: 403,
  production_only: 403,
  replica_readonly: 403,
  order_set_mismatch: 422,
  hierarchy_violation: 422,
  banner_type_unavailable: 422,
  already_exists: 409,
  plan_limit_reached: 409,
  email_recently_sent: 409,
  feature_disabled: 409,
  tag_in_use: 409,
  template_not_previewable: 409,
  format_unsupported: 409,
  human_mode_not_allowed: 403,
  admin_not_eligible: 403,
  tenant_mismatch: 403,
  too_many_streams: 429,
  stream_busy: 409,
  cursor_expired: 410,
  sandbox_required: 409,
  unsupported_resource: 422,
  plan_invalid: 422,
  plan_stale: 409,
  plan_expired: 409,
  operation_sunset: 410,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetail {
  field?: string;
  parameter?: string;
  code: string;
  message: string;
  reason?: string;
}

export interface AppErrorOptions {
  status?: number;
  details?: ErrorDetail[];
  /** Extra members of the v3 `error` object (e.g. retry_after_seconds on 429). */
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
  /** Values interpolated into the localized message. */
  params?: Record<string, string | number>;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: ErrorDetail[];
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;
  readonly params: Record<string, string | number>;

  constructor(code: ErrorCode, options: AppErrorOptions = {}) {
    super(code);
    this.code = code;
    this.status = options.status ?? ERROR_STATUS[code];
    this.details = options.details ?? [];
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
    this.params = options.params ?? {};
  }
}

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;
