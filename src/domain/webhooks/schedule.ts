// The delivery schedule and what every attempt sends: retries after the first try, the window
// they span (`deadline_at`), the concurrency limits, and the event envelope as recorded.
import { HOUR } from '../../clock.ts';
import { eventEnvelope, type Event } from '../events/types.ts';

const MIN = 60_000;
/** After the first try: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const RETRY_MS = [5_000, 5 * MIN, 30 * MIN, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];
/** From creation to the last retry: `deadline_at`. */
export const WINDOW_MS = RETRY_MS.reduce((a, b) => a + b, 0);
export const DELIVER_TASK = 'webhook.deliver';
/** An attempt's hold on its delivery: the 15 s timeout plus ample time to record the outcome. */
export const LEASE_MS = 60_000;
export const PER_ENDPOINT = 16;
export const PER_PROCESS = 256;

/** Sealed secrets are bound to their endpoint: a row copied elsewhere does not open. */
export const secretContext = (endpointId: number) => `webhook_endpoint:${endpointId}`;

/** A delivery's body: the event envelope, as GET /events/{id} shows it. */
export const envelope = (e: Event): string => JSON.stringify(eventEnvelope(e));
