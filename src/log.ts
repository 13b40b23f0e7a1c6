import pino from 'pino';

/**
 * Structured logs; secrets are never logged (no headers or bodies, and redaction as a net).
 * `destination`: where lines go (stdout by default; tests capture them).
 */
export function createLogger(level: string, destination?: pino.DestinationStream) {
  return pino(
    {
      level,
      base: undefined,
      redact: [
        '*.authorization',
        '*.secret',
        '*.password',
        '*["x-api-key"]',
        '*.token',
        '*.headers.authorization',
        '*.headers.cookie',
        '*.headers["x-api-key"]',
        '*.access_token',
        '*.refresh_token',
        '*.totp_secret',
      ],
    },
    destination,
  );
}

export type Logger = ReturnType<typeof createLogger>;
