// The account's shared reader (src/domain/streams/reader.ts): streams that keep up get each new
// event from one read of the account, not one read per stream; a stream behind (an older cursor,
// a backlog longer than one read) reads its own backlog, then follows, with nothing missed or
// sent twice, whatever its types.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { transaction } from '../../src/db/tx.ts';
import { streamsRepo } from '../../src/domain/streams/repo.ts';
import { boot, type Booted } from '../helpers/app.ts';
import { closed, createStream, follow, type SseConnection } from '../helpers/sse.ts';

const t = suite<{ b: Booted }>('v3 event streams: one shared reader per account');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

/** Records `n` events in one transaction (types alternate); returns their ids. */
async function record(b: Booted, n: number): Promise<{ id: string; type: string }[]> {
  return transaction(b.app.db, async (tx) => {
    const out: { id: string; type: string }[] = [];
    for (let i = 0; i < n; i++) {
      const type = i % 2 ? 'tag.assigned' : 'tag.removed';
      const e = await b.app.services.events.record(
        { tx },
        {
          accountId: b.accountId,
          type,
          data: { user_id: String(i + 1), tag: { id: '1', name: `t${i}` } },
        },
      );
      out.push({ id: String(e.id), type });
    }
    return out;
  });
}

t('five streams following: one new event is one read of the account, not five', async ({ b }) => {
  const streams = await Promise.all([0, 1, 2, 3, 4].map(() => createStream(b)));
  const conns: SseConnection[] = [];
  const original = streamsRepo.eventsAfter;
  let reads = 0;
  try {
    for (const s of streams) conns.push(await follow(b, s.id));
    await b.app.services.events.listening();
    // Connected and caught up: each has read what there was (nothing) and follows the reader.
    const [warm] = await record(b, 1);
    for (const c of conns) await c.until(() => c.ids().includes(warm!.id), 'the first event');
    streamsRepo.eventsAfter = (...args) => {
      if (args[1] === b.accountId) reads++;
      return original(...args);
    };
    const [e] = await record(b, 1);
    for (const c of conns) await c.until(() => c.ids().includes(e!.id), 'the event');
    // One read for the notification (a tick of one of them may add one); five before.
    assert.ok(reads >= 1 && reads <= 2, `reads: ${reads}`);
    for (const c of conns) assert.equal(c.ids(), [warm!.id, e!.id]);
  } finally {
    streamsRepo.eventsAfter = original;
    for (const c of conns) await closed(c);
    for (const s of streams) await b.api('DELETE', `/api/v3/event-streams/${s.id}`);
  }
});

t('a stream behind reads its backlog (more than one read), then follows', async ({ b }) => {
  const all = await createStream(b);
  const typed = await createStream(b, { types: ['tag.assigned'] });
  const backlog = await record(b, 250);
  const live = await createStream(b);
  const c = await follow(b, live.id);
  try {
    await b.app.services.events.listening();
    // The live one follows from the newest event; the two others start 250 events behind it.
    const first = await record(b, 3);
    await c.until(() => c.events.length >= 3, 'live events');
    const a = await follow(b, all.id, '?cursor=0');
    const t2 = await follow(b, typed.id, `?cursor=${backlog[0]!.id}`);
    try {
      const more = await record(b, 5);
      const everything = [...backlog, ...first, ...more];
      const assigned = everything.slice(1).filter((e) => e.type === 'tag.assigned');
      await a.until(() => a.events.length >= everything.length, 'the whole backlog and more');
      await t2.until(() => t2.events.length >= assigned.length, 'the typed backlog and more');
      await c.until(() => c.events.length >= 8, 'the live events');
      // cursor=0 starts at the oldest event retained: every one, in order, each once.
      const ids = a.ids();
      assert.equal(
        ids.slice(-everything.length),
        everything.map((e) => e.id),
      );
      assert.is(new Set(ids).size, ids.length);
      assert.equal(
        t2.ids(),
        assigned.map((e) => e.id),
      );
      assert.equal(
        c.ids(),
        [...first, ...more].map((e) => e.id),
      );
    } finally {
      await closed(a);
      await closed(t2);
    }
  } finally {
    await closed(c);
  }
});

t.run();
