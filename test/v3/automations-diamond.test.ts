// Diamond automations: forward-only stage moves (409 on a repeat or a move back, 422 without a
// reason), the stage's communication sent once through the email outbox, the
// diamond_membership.stage_changed event, and processing attempts (re-send of a failed
// communication only on request; nothing sent again once the stage is confirmed).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { smtpServer } from '../helpers/smtp.ts';
import { EMAIL_MAX_ATTEMPTS } from '../../src/domain/outbox/service.ts';

const t = suite<{ b: Booted }>('v3 Diamond automations');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const STAGES = [
  { key: 'welcome', name: 'Welcome', communication: { subject: 'Welcome!', body: 'Lesson 1.' } },
  { key: 'engaged', name: 'Engaged', communication: { subject: 'Keep going', body: 'Lesson 2.' } },
  { key: 'offer', name: 'Offer', communication: { subject: 'A gift', body: '20% off.' } },
];

let counter = 0;
async function setup(b: Booted) {
  const n = ++counter;
  const email = `diamond${n}@example.com`;
  const user = (
    await b.api('POST', '/api/v3/users', { body: { name: `D ${n}`, email }, key: newKey() })
  ).body.data;
  const diamond = (
    await b.api('POST', '/api/v3/automations/diamond', {
      body: { name: `Onboarding ${n}`, stages: STAGES },
      key: newKey(),
    })
  ).body.data;
  const res = await b.api('POST', `/api/v3/automations/diamond/${diamond.id}/memberships`, {
    body: { user_id: user.id },
    key: newKey(),
  });
  assert.is(res.status, 201);
  const base = `/api/v3/automations/diamond/${diamond.id}/memberships/${res.body.data.id}`;
  return { user, email, diamond, membership: res.body.data, base };
}

const move = (b: Booted, base: string, body: object, headers: Record<string, string> = {}) =>
  b.api('PATCH', base, { body, headers });

const attempts = async (b: Booted, base: string) => {
  const res = await b.api('GET', `${base}/processing-attempts`);
  assert.is(res.status, 200);
  return res.body.data as any[];
};

/** Polls the attempts until none is queued (the outbox job settles them). */
async function settled(b: Booted, base: string): Promise<any[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const list = await attempts(b, base);
    if (!list.some((a) => a.status === 'queued')) return list;
    if (Date.now() > deadline) throw new Error(`attempts stuck: ${JSON.stringify(list)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const emailsTo = (b: Booted, email: string) => b.app.services.outbox.history(b.accountId, email);

t('a Diamond automation: stages in order, ETag, duplicate keys refused', async ({ b }) => {
  const res = await b.api('POST', '/api/v3/automations/diamond', {
    body: { name: ' Onboarding ', stages: STAGES },
    key: newKey(),
  });
  assert.is(res.status, 201);
  const d = res.body.data;
  assert.equal(d, {
    object: 'diamond',
    id: d.id,
    name: 'Onboarding',
    stages: STAGES.map((s, i) => ({ ...s, position: i + 1 })),
    revision: d.revision,
    created_at: d.created_at,
    updated_at: d.created_at,
  });
  assert.is(res.headers.get('etag'), `"${d.revision}"`);
  const got = await b.api('GET', `/api/v3/automations/diamond/${d.id}`);
  assert.equal(got.body.data, d);
  assert.is((await b.api('GET', '/api/v3/automations/diamond/999999')).status, 404);

  const dupe = await b.api('POST', '/api/v3/automations/diamond', {
    body: { name: 'Dupe', stages: [STAGES[0], STAGES[1], STAGES[0]] },
    key: newKey(),
  });
  assert.is(dupe.status, 422);
  assert.is(dupe.body.error.code, 'validation_failed');
  assert.equal(
    dupe.body.error.details.map((x: any) => [x.field, x.code]),
    [['stages.2.key', 'already_exists']],
  );
});

t('joining: first stage, once per student, an existing student only', async ({ b }) => {
  const { user, diamond, membership, base } = await setup(b);
  assert.equal(membership, {
    object: 'diamond_membership',
    id: membership.id,
    diamond_id: diamond.id,
    user_id: user.id,
    stage: 'welcome',
    stage_position: 1,
    revision: membership.revision,
    created_at: membership.created_at,
    updated_at: membership.created_at,
  });
  const got = await b.api('GET', base);
  assert.equal(got.body.data, membership);
  assert.is(got.headers.get('etag'), `"${membership.revision}"`);

  const again = await b.api('POST', `/api/v3/automations/diamond/${diamond.id}/memberships`, {
    body: { user_id: user.id },
    key: newKey(),
  });
  assert.is(again.status, 409);
  assert.is(again.body.error.code, 'already_exists');
  const nobody = await b.api('POST', `/api/v3/automations/diamond/${diamond.id}/memberships`, {
    body: { user_id: '999999' },
    key: newKey(),
  });
  assert.is(nobody.status, 422);
  assert.equal(nobody.body.error.details[0].field, 'user_id');
  const noDiamond = await b.api('POST', `/api/v3/automations/diamond/999999/memberships`, {
    body: { user_id: user.id },
    key: newKey(),
  });
  assert.is(noDiamond.status, 404);
  // The first stage's communication is queued at once, with no event (nothing changed stage).
  const [first] = await attempts(b, base);
  assert.equal(
    { status: first.status, event_id: first.event_id, selection: first.selection },
    { status: 'queued', event_id: null, selection: { mode: 'initial', rows: 1 } },
  );
});

t('stage moves: forward only, a reason required, If-Match honoured', async ({ b }) => {
  const { membership, base, user, diamond } = await setup(b);
  const noReason = await move(b, base, { stage: 'engaged' });
  assert.is(noReason.status, 422);
  assert.is(noReason.body.error.code, 'validation_failed');
  assert.equal(noReason.body.error.details[0].field, 'reason');
  const unknown = await move(b, base, { stage: 'nowhere', reason: 'x' });
  assert.is(unknown.status, 422);
  assert.equal(unknown.body.error.details[0].field, 'stage');
  assert.match(unknown.body.error.details[0].message, /welcome, engaged, offer/);
  const stale = await move(b, base, { stage: 'engaged', reason: 'x' }, { 'if-match': '"old"' });
  assert.is(stale.status, 412);
  const repeat = await move(b, base, { stage: 'welcome', reason: 'again' });
  assert.is(repeat.status, 409);
  assert.is(repeat.body.error.code, 'state_conflict');
  assert.is(repeat.body.error.details[0].reason, 'current_stage');

  const res = await move(
    b,
    base,
    { stage: 'offer', reason: 'Bought the course' },
    { 'if-match': `"${membership.revision}"` },
  );
  assert.is(res.status, 200);
  assert.is(res.body.data.stage, 'offer');
  assert.is(res.body.data.stage_position, 3);
  assert.is.not(res.body.data.revision, membership.revision);
  assert.is(res.headers.get('etag'), `"${res.body.data.revision}"`);

  const back = await move(b, base, { stage: 'engaged', reason: 'changed my mind' });
  assert.is(back.status, 409);
  assert.is(back.body.error.code, 'state_conflict');
  assert.is(back.body.error.details[0].reason, 'earlier_stage');
  const same = await move(b, base, { stage: 'offer', reason: 'once more' });
  assert.is(same.status, 409);
  assert.is((await b.api('GET', base)).body.data.stage, 'offer');

  // The move recorded its event, with the reason, in the same transaction.
  const list = await attempts(b, base);
  assert.is(list.length, 2);
  const eventId = list[1].event_id;
  assert.ok(eventId);
  const event = await b.app.services.events.get(b.accountId, Number(eventId));
  assert.is(event.type, 'diamond_membership.stage_changed');
  assert.equal(event.data, {
    membership_id: membership.id,
    diamond_id: diamond.id,
    user_id: user.id,
    from_stage: 'welcome',
    to_stage: 'offer',
    reason: 'Bought the course',
  });
});

t(
  'each stage entered sends its communication once; a replayed move sends nothing',
  async ({ b }) => {
    const { base, email } = await setup(b);
    const key = newKey();
    const first = await b.api('PATCH', base, { body: { stage: 'engaged', reason: 'r' }, key });
    assert.is(first.status, 200);
    const replay = await b.api('PATCH', base, { body: { stage: 'engaged', reason: 'r' }, key });
    assert.is(replay.status, 200);
    assert.is(replay.headers.get('idempotent-replayed'), 'true');
    await b.app.startWorkers();
    const list = await settled(b, base);
    assert.equal(
      list.map((a) => [a.status, a.effects, a.selection.mode]),
      [
        ['sent', { communication_sent: true, stage_confirmed: true }, 'initial'],
        ['sent', { communication_sent: true, stage_confirmed: true }, 'initial'],
      ],
    );
    const sent = await emailsTo(b, email);
    assert.equal(sent.map((e) => [e.subject, e.status]).reverse(), [
      ['Welcome!', 'sent'],
      ['Keep going', 'sent'],
    ]);
  },
);

t('processing attempts: a failed communication is re-sent only on request', async ({ b }) => {
  const { base, email } = await setup(b);
  await b.app.startWorkers();
  await settled(b, base);
  // The address bounces: the next stage's communication fails, and stays failed.
  await b.app.services.outbox.bounce(b.accountId, email, 'mailbox full');
  assert.is((await move(b, base, { stage: 'engaged', reason: 'r' })).status, 200);
  let list = await settled(b, base);
  const failed = list[1];
  assert.is(failed.status, 'failed');
  assert.equal(failed.effects, { communication_sent: false, stage_confirmed: false });
  assert.is(failed.error.code, 'address_bounced');
  assert.equal(Object.keys(failed).sort(), [
    'created_at',
    'effects',
    'error',
    'event_id',
    'id',
    'import_id',
    'membership_id',
    'object',
    'operation_id',
    'requested_by',
    'selection',
    'status',
  ]);
  assert.equal(
    [failed.object, failed.import_id, failed.operation_id, failed.requested_by],
    ['processing_attempt', null, null, { id: String(b.credentialId), kind: 'credential' }],
  );
  await new Promise((r) => setTimeout(r, 100));
  assert.is((await attempts(b, base)).length, 2, 'never retried automatically');

  await b.app.services.outbox.unbounce(b.accountId, email);
  const retry = await b.api('POST', `${base}/processing-attempts`, { key: newKey() });
  assert.is(retry.status, 201);
  assert.equal(
    [retry.body.data.status, retry.body.data.selection, retry.body.data.event_id],
    ['queued', { mode: 'failed', rows: 1 }, failed.event_id],
  );
  list = await settled(b, base);
  assert.equal(list[2].status, 'sent');
  assert.equal(list[2].effects, { communication_sent: true, stage_confirmed: true });

  // Confirmed: nothing is sent again.
  const noop = await b.api('POST', `${base}/processing-attempts`, { key: newKey() });
  assert.is(noop.status, 201);
  assert.equal(
    [noop.body.data.status, noop.body.data.effects, noop.body.data.selection],
    ['skipped', { communication_sent: false, stage_confirmed: true }, { mode: 'failed', rows: 0 }],
  );
  const subjects = (await emailsTo(b, email)).map((e) => [e.subject, e.status]).reverse();
  assert.equal(subjects, [
    ['Welcome!', 'sent'],
    ['Keep going', 'suppressed'],
    ['Keep going', 'sent'],
  ]);
});

t('processing attempts: 409 while the communication is still queued', async ({ b }) => {
  // A fresh app whose workers never run: the first stage's email stays queued.
  const idle = await boot();
  try {
    const { base } = await setup(idle);
    const res = await idle.api('POST', `${base}/processing-attempts`, { key: newKey() });
    assert.is(res.status, 409);
    assert.is(res.body.error.code, 'state_conflict');
    assert.is((await attempts(idle, base)).length, 1);
  } finally {
    await idle.close();
  }
});

t(
  'processing attempts: a communication still refused on its last try fails, and can be re-sent',
  async () => {
    // The job engine's tries are driven by hand here (its backoff runs on the database clock on
    // PostgreSQL): the outbox job's work, on a try before the last and on the last one.
    const server = await smtpServer();
    server.reply = () => '451 4.3.0 Try again later';
    const b = await boot({ env: { SMTP_URL: `smtp://127.0.0.1:${server.port}` } });
    try {
      const { base, email } = await setup(b);
      const { outbox } = b.app.services;
      const [queued] = await emailsTo(b, email);
      const thrown = await outbox.send(queued!.id, 1).then(
        () => null,
        (err: Error) => err,
      );
      assert.match(String(thrown?.message), '451');
      assert.is((await attempts(b, base))[0].status, 'queued', 'retried later');
      assert.is(await outbox.send(queued!.id, EMAIL_MAX_ATTEMPTS), 'failed');
      const [failed] = await attempts(b, base);
      assert.is(failed.status, 'failed');
      assert.is(failed.error.code, 'delivery_failed');
      assert.match(failed.error.message, `gave up after ${EMAIL_MAX_ATTEMPTS} tries`);
      assert.equal(failed.effects, { communication_sent: false, stage_confirmed: false });

      server.reply = () => '250 OK';
      const retry = await b.api('POST', `${base}/processing-attempts`, { key: newKey() });
      assert.is(retry.status, 201);
      assert.equal(
        [retry.body.data.status, retry.body.data.selection],
        ['queued', { mode: 'failed', rows: 1 }],
      );
      const [again] = await emailsTo(b, email);
      assert.is(await outbox.send(again!.id, 1), 'sent');
      assert.equal(
        (await attempts(b, base)).map((a) => a.status),
        ['failed', 'sent'],
      );
      assert.is(server.messages.length, 1);
    } finally {
      await b.close();
      await server.close();
    }
  },
);

t('permissions: automations.read reads, automations.write changes', async ({ b }) => {
  const { base } = await setup(b);
  const reader = await credentialWith(b, ['automations.read']);
  assert.is((await b.api('GET', base, { secret: reader.secret })).status, 200);
  const denied = await b.api('PATCH', base, {
    body: { stage: 'offer', reason: 'r' },
    secret: reader.secret,
  });
  assert.is(denied.status, 403);
  assert.is(denied.body.error.details[0].reason, 'automations.write');
});

t.run();
