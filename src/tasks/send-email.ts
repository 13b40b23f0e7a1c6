// `email.send`: sends one email of the outbox (SMTP, or the log without SMTP_URL) and records the
// outcome. A transient failure throws, and the job engine retries it with backoff; on the last
// try the email fails instead (see OutboxService.send).
import type { Task } from '../jobs/types.ts';
import type { OutboxService } from '../domain/outbox/service.ts';

export const sendEmail =
  (outbox: OutboxService): Task =>
  async (payload: { email_id: number }, ctx) => {
    await outbox.send(payload.email_id, ctx.attempt);
  };
