import pino from 'pino';
import pretty from 'pino-pretty';

/**
 * Structured logs; secrets are never logged (no headers or bodies, and redaction as a net).
 * `destination`: where lines go (stdout by default; tests capture them).
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  format: 'json' | 'pretty' = 'json',
) {
  // Pretty lines are formatted in this thread (not a transport worker): local use, modest volume.
  const out =
    destination ??
    (format === 'pretty'
      ? pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
      : undefined);
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
    out,
  );
}

export type Logger = ReturnType<typeof createLogger>;
