// Webhook endpoints in tests: register one, record events through HTTP, and poll deliveries until
// they reach the state the test expects (never sleeps for time rules: the clock moves instead).
import * as assert from 'uvu/assert';
import { newKey, type Booted } from './app.ts';

export async function createWebhook(
  b: Booted,
  url: string,
  body: Record<string, unknown> = {},
): Promise<{ id: string; secret: string; webhook: any }> {
  const res = await b.api('POST', '/api/v3/webhooks', {
    body: { url, event_types: ['*'], ...body },
    key: newKey(),
  });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return { id: res.body.data.id, secret: res.body.data.secret, webhook: res.body.data };
}

let counter = 0;
/** Records a user.created event (and returns the user). */
export async function createUser(b: Booted): Promise<any> {
  const res = await b.api('POST', '/api/v3/users', {
    body: { name: 'Ana Souza', email: `hook${process.pid}-${++counter}@example.com` },
    key: newKey(),
  });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

export async function deliveries(b: Booted, webhookId: string, query = ''): Promise<any[]> {
  const res = await b.api('GET', `/api/v3/webhooks/${webhookId}/deliveries?limit=200${query}`);
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}

/** Polls the deliveries (every 10 ms, at most 10 s) until `until` holds; returns them. */
export async function settle(
  b: Booted,
  webhookId: string,
  until: (list: any[]) => boolean,
): Promise<any[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const list = await deliveries(b, webhookId);
    if (until(list)) return list;
    if (Date.now() > deadline) throw new Error(`deliveries stuck: ${JSON.stringify(list)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Moves the clock and runs what became due (as the minute sweep would). */
export async function advance(b: Booted, ms: number): Promise<void> {
  b.clock.advance(ms);
  await b.app.services.webhookDispatcher.runDue({ wait: true });
}
