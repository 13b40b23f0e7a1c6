// Operations in tests: submit a batch and wait for it to finish, and test-only batch types whose
// items the test holds or fails at will.
import * as assert from 'uvu/assert';
import { AppError } from '../../src/errors.ts';
import type { BatchType } from '../../src/domain/operations/batch-types.ts';
import { newKey, type Booted, type RequestOptions } from './app.ts';

export const FINAL = ['succeeded', 'partially_succeeded', 'failed', 'canceled'];

export async function submit(
  b: Booted,
  type: string,
  items: { key: string; payload: object }[],
  options: RequestOptions = {},
) {
  return b.api('POST', '/api/v3/operations/batches', {
    body: { type, items },
    key: newKey(),
    ...options,
  });
}

/**
 * Polls GET /operations/{id} until `until` holds (default: a final status); at most `ms` (15 s; a
 * liveness deadline, not a speed assertion: suites whose work runs in worker processes they start
 * give those processes' start-up time on a busy machine).
 */
export async function waitFor(
  b: Booted,
  id: string,
  until: (op: any) => boolean = (op) => FINAL.includes(op.status),
  secret?: string,
  ms = 60_000,
): Promise<any> {
  // Generous: on a loaded two-core machine an item-by-item PostgreSQL import takes 15 s and more.
  // The pause grows to 50 ms, so a long wait does not take the CPU from the work it waits for.
  const deadline = Date.now() + ms;
  for (let pause = 10; ; pause = Math.min(pause * 1.5, 50)) {
    const res = await b.api('GET', `/api/v3/operations/${id}`, { secret });
    assert.is(res.status, 200);
    if (until(res.body.data)) return res.body.data;
    if (Date.now() > deadline)
      throw new Error(`operation ${id} stuck: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, pause));
  }
}

export async function allItems(b: Booted, id: string, secret?: string): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const res = await b.api('GET', `/api/v3/operations/${id}/items?limit=200${q}`, { secret });
    assert.is(res.status, 200);
    out.push(...res.body.data);
    cursor = res.body.page.next_cursor;
  } while (cursor);
  return out;
}

/**
 * A batch type for tests. Payload `{fail: 'app'}` fails the item for good, `{fail: 'transient'}`
 * fails it retryably on its first run (every run with `always`), `{delay: ms}` makes it slow.
 * `calls` counts the runs of each payload id.
 */
export function testType(b: Booted, name = 'test.items') {
  const calls = new Map<string, number>();
  const type: BatchType = {
    permission: 'users.write',
    maxItems: 1000,
    async apply(_tx, _account, payload) {
      calls.set(payload.id, (calls.get(payload.id) ?? 0) + 1);
      if (payload.delay) await new Promise((r) => setTimeout(r, payload.delay));
      if (payload.fail === 'app') throw new AppError('not_found');
      if (payload.fail === 'transient' && (payload.always || calls.get(payload.id) === 1))
        throw new Error('the database went away');
      return { id: payload.id };
    },
  };
  b.app.services.operations.types[name] = type;
  return { calls };
}
