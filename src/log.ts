import pino from 'pino';

/** Structured logs; secrets are never logged (no headers or bodies, and redaction as a net). */
export function createLogger(level: string) {
  return pino({
    level,
    base: undefined,
    redact: ['*.authorization', '*.secret', '*.password', '*["x-api-key"]', '*.token'],
  });
}

export type Logger = ReturnType<typeof createLogger>;
