import { createRequire } from 'node:module';
import pino from 'pino';

// pino-pretty (about 45 ms of module loading) is loaded only for pretty output.
const require = createRequire(import.meta.url);

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
      ? (require('pino-pretty') as typeof import('pino-pretty')).build({
          colorize: true,
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname',
        })
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
