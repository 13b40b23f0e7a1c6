// The sales part of the composition root (src/services.ts builds it once): the email outbox,
// enrollments, progress, deliveries (with their copies in replica accounts), transactions and
// gateway postbacks, over the services they build on.
import type { Clock } from '../../clock.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { JobEngine } from '../../jobs/types.ts';
import type { Logger } from '../../log.ts';
import type { UsersService } from '../users/service.ts';
import type { TagsService } from '../tags/service.ts';
import { noEvents, type EventRecorder } from '../events/types.ts';
import { EnrollmentsService } from '../enrollments/service.ts';
import { createMailer } from '../outbox/mailer.ts';
import { OutboxService } from '../outbox/service.ts';
import { ProgressService } from '../progress/service.ts';
import { DeliveriesService } from './deliveries.ts';
import { PostbacksService } from './postbacks.ts';
import { DeliveryReplicas } from './replicas.ts';
import { TransactionsService } from './transactions.ts';

export interface SalesDeps {
  db: Db;
  clock: Clock;
  cursors: CursorCodec;
  jobs: JobEngine;
  logger: Logger;
  config: { smtpUrl: string | undefined; emailFrom: string };
  users: UsersService;
  tags: TagsService;
  events?: EventRecorder;
}

export function createSalesServices(d: SalesDeps) {
  const events = d.events ?? noEvents;
  const mailer = createMailer(d.config.smtpUrl, d.logger);
  const outbox = new OutboxService(d.db, d.clock, d.jobs, mailer, d.config.emailFrom);
  const enrollments = new EnrollmentsService(d.db, d.clock, d.cursors, outbox, events);
  const replicas = new DeliveryReplicas(d.clock);
  const deliveries = new DeliveriesService(d.db, d.clock, d.cursors, (tx, delivery) =>
    replicas.sync({ tx }, delivery),
  );
  return {
    outbox,
    enrollments,
    progress: new ProgressService(d.db, d.clock, d.cursors),
    deliveries,
    transactions: new TransactionsService(d.db, d.cursors),
    postbacks: new PostbacksService(d.db, d.clock, d.users, d.tags, enrollments, events),
    /** A sandbox reset: deliveries (with their transactions) and the outbox of the account. */
    async resetAccount({ tx }: { tx: Tx }, accountId: number): Promise<void> {
      await deliveries.resetAccount({ tx }, accountId);
      await outbox.resetAccount({ tx }, accountId);
    },
  };
}

export type SalesServices = ReturnType<typeof createSalesServices>;
