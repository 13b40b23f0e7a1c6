// How an email leaves: through SMTP (nodemailer) when SMTP_URL is set, or into the log otherwise
// (development and tests). Only the outbox job calls it, never a request's transaction.
// nodemailer (about 150 ms of module loading) is imported at the first send, not at start.
import type { Transporter } from 'nodemailer';
import type { Logger } from '../../log.ts';

export interface OutgoingEmail {
  from: string;
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  readonly mode: 'smtp' | 'log';
  send(message: OutgoingEmail): Promise<void>;
}

/** An SMTP refusal that will not change on retry (5xx): the address goes on the bounce list. */
export class PermanentFailure extends Error {}

export function createMailer(smtpUrl: string | undefined, logger: Logger): Mailer {
  if (!smtpUrl) {
    return {
      mode: 'log',
      async send(message) {
        logger.info({ email: message }, 'email (log mode: SMTP_URL is not set)');
      },
    };
  }
  let transport: Promise<Transporter> | undefined;
  return {
    mode: 'smtp',
    async send(message) {
      transport ??= import('nodemailer').then((m) => m.default.createTransport(smtpUrl));
      try {
        await (await transport).sendMail(message);
      } catch (err) {
        const code = (err as { responseCode?: number }).responseCode;
        if (code !== undefined && code >= 500 && code < 600)
          throw new PermanentFailure((err as Error).message);
        throw err;
      }
    },
  };
}
