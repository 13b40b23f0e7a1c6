// sweep.events (hourly): events older than 30 days are deleted, and their webhook deliveries and
// attempts with them. Times come from the injectable clock.
import type { Task } from '../jobs/types.ts';
import type { EventsService } from '../domain/events/service.ts';

export const sweepEvents =
  (events: EventsService): Task =>
  async () => {
    await events.purgeExpired();
  };
