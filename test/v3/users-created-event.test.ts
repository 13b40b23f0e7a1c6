// The user.created event as recorded, byte for byte, on both engines. On PostgreSQL the student
// and its event go in one statement (EventRecorder.recordWithInsert): the event's data is built
// before the row exists, with a placeholder id that the statement replaces. These check that what
// is recorded is what the student's row says, for values the database changes (a lone surrogate
// becomes U+FFFD), for a profile that holds the placeholder's digits (the two-statement path),
// and that a duplicate email records nothing.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted }>('v3 users: the user.created event as recorded');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

/** The stored text of the account's user.created events, newest first. */
async function recorded(b: Booted): Promise<{ id: number; data: string }[]> {
  const rows = await b.app
    .db('events')
    .where({ account_id: b.accountId, type: 'user.created' })
    .orderBy('id', 'desc')
    .select('id', 'data');
  return rows.map((r: { id: unknown; data: string }) => ({ id: Number(r.id), data: r.data }));
}

/** The event's data as userSnapshot writes it, from the student's resource. */
function expectedText(u: Record<string, any>): string {
  return JSON.stringify({
    user: {
      id: u.id,
      name: u.name,
      email: u.email,
      phone: u.phone,
      document: u.document,
      job_title: u.job_title,
      company_name: u.company_name,
      company_size: u.company_size,
      free: u.free,
      utm: u.utm,
      created_at: u.created_at,
      updated_at: u.updated_at,
    },
  });
}

async function create(b: Booted, body: object) {
  const res = await b.api('POST', '/api/v3/users', { body, key: newKey() });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

t('the event holds the student as stored, with its own id', async ({ b }) => {
  const before = (await recorded(b)).length;
  const u = await create(b, {
    name: 'Ana \uD800 Souza',
    email: 'ana.event@example.com',
    phone: '+55 11 91234-5678',
    job_title: 'Teacher',
    free: true,
    utm: { utm_source: 'news\uDC00letter', gclid: 'g-1' },
  });
  assert.is(u.name, 'Ana \uFFFD Souza', 'the lone surrogate as the database keeps it');
  const events = await recorded(b);
  assert.is(events.length, before + 1);
  assert.is(events[0]!.data, expectedText(u));
  assert.is(JSON.parse(events[0]!.data).user.id, u.id);
  // The resource read back says the same.
  const read = await b.api('GET', `/api/v3/users/${u.id}`);
  assert.is(expectedText(read.body.data), events[0]!.data);
});

t('a profile holding the placeholder digits records the same event', async ({ b }) => {
  const u = await create(b, {
    name: 'Bea 987654321098765',
    email: 'bea.987654321098765@example.com',
  });
  const [e] = await recorded(b);
  assert.is(e!.data, expectedText(u));
});

t('students in a row: each event has its student id', async ({ b }) => {
  const made = [];
  for (let i = 0; i < 3; i++)
    made.push(await create(b, { name: `Cy ${i}`, email: `cy${i}@x.com` }));
  const events = (await recorded(b)).slice(0, 3).reverse();
  assert.equal(
    events.map((e) => JSON.parse(e.data).user.id),
    made.map((u) => u.id),
  );
  // Events follow recording order.
  assert.ok(events[0]!.id < events[1]!.id && events[1]!.id < events[2]!.id);
});

t('a duplicate email is 409 and records no event', async ({ b }) => {
  await create(b, { name: 'Di', email: 'di@example.com' });
  const before = (await recorded(b)).length;
  const res = await b.api('POST', '/api/v3/users', {
    body: { name: 'Di again', email: 'DI@example.com' },
    key: newKey(),
  });
  assert.is(res.status, 409, JSON.stringify(res.body));
  assert.is(res.body.error.code, 'already_exists');
  assert.is((await recorded(b)).length, before);
});

t.run();
