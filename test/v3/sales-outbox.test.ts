// The email outbox: a new enrollment writes a welcome email in its transaction, and the
// `email.send` job sends it: into the log without SMTP_URL, through SMTP with it (a tiny server
// on 127.0.0.1). Per-address history, the bounce list (a 550 puts an address on it; bounced
// addresses are suppressed; unbounce refuses an address that never received an email), and a
// transient refusal retried until it goes through.
import { Writable } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pino from 'pino';
import { HOUR } from '../../src/clock.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { product } from '../helpers/catalog.ts';
import { student } from '../helpers/sales.ts';
import { smtpServer, type SmtpServer } from '../helpers/smtp.ts';

/** Enrolls a new student in a new product: one welcome email. Returns the student's email. */
async function welcome(b: Booted, email: string): Promise<string> {
  const u = await student(b, email, 'Lia Reis');
  const p = await product(b, { name: `Course for ${email}` });
  const res = await b.api('POST', '/api/v3/enrollments', {
    body: { user_id: u.id, product_id: p.id },
    key: newKey(),
  });
  assert.is(res.status, 201);
  return email;
}

/** Polls the outbox row of the address until `until` holds (the job runs in the background). */
async function emailTo(b: Booted, address: string, until: (row: any) => boolean) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const [row] = await b.app.db('emails').where('to_email', address).orderBy('id', 'desc');
    if (row && until(row)) return row;
    if (Date.now() > deadline) throw new Error(`email to ${address} stuck: ${JSON.stringify(row)}`);
    // A retry waits for its backoff on the (test) clock.
    b.clock.advance(HOUR);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const logMode = suite<{ b: Booted; lines: any[] }>('v3 sales: outbox in log mode');
logMode.before(async (ctx) => {
  ctx.lines = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) ctx.lines.push(JSON.parse(line));
      done();
    },
  });
  ctx.b = await boot({ logger: pino({ level: 'info', base: undefined }, sink) });
  await ctx.b.app.startWorkers();
});
logMode.after(async (ctx) => ctx.b.close());

logMode('without SMTP_URL the welcome email is written to the log', async ({ b, lines }) => {
  const to = await welcome(b, 'log@example.com');
  const row = await emailTo(b, to, (r) => r.status === 'sent');
  assert.equal([row.kind, row.attempts, row.error], ['enrollment.welcome', 1, null]);
  const logged = lines.find((l) => l.email?.to === to);
  assert.ok(logged, 'the email is in the log');
  assert.equal(
    [logged.email.subject, logged.email.text.includes('Lia Reis')],
    ['Welcome to Course for log@example.com', true],
  );
  const { outbox } = b.app.services;
  assert.is(await outbox.hasReceived(b.accountId, 'LOG@example.com'), true);
  assert.is(await outbox.hasReceived(b.accountId, 'never@example.com'), false);
  const [history] = await outbox.history(b.accountId, to);
  assert.equal([history.kind, history.status], ['enrollment.welcome', 'sent']);
});

logMode.run();

const smtp = suite<{ b: Booted; server: SmtpServer }>('v3 sales: outbox through SMTP');
smtp.before(async (ctx) => {
  ctx.server = await smtpServer();
  ctx.b = await boot({ env: { SMTP_URL: `smtp://127.0.0.1:${ctx.server.port}` } });
  await ctx.b.app.startWorkers();
});
smtp.after(async (ctx) => {
  await ctx.b.close();
  await ctx.server.close();
});

smtp('sent through SMTP; a 550 bounces the address, later emails are suppressed', async (ctx) => {
  const { b, server } = ctx;
  const ok = await welcome(b, 'smtp@example.com');
  await emailTo(b, ok, (r) => r.status === 'sent');
  const message = server.messages.find((m) => m.to.includes(ok))!;
  assert.ok(message, 'the SMTP server received it');
  assert.is(message.from, 'no-reply@school.invalid');
  assert.ok(message.data.includes('Subject: Welcome to Course for smtp@example.com'));

  server.reply = (to) => (to === 'gone@example.com' ? '550 5.1.1 No such user' : '250 OK');
  const gone = await welcome(b, 'gone@example.com');
  const failed = await emailTo(b, gone, (r) => r.status === 'failed');
  assert.ok(String(failed.error).includes('550'));
  const { outbox } = b.app.services;
  assert.is(await outbox.isBounced(b.accountId, gone), true);
  // Never delivered: it cannot be taken off the list.
  const refused = await outbox.unbounce(b.accountId, gone).catch((e) => e);
  assert.equal(
    [refused.code, refused.details[0].reason],
    ['domain_rule_violation', 'never_emailed'],
  );
  const received = server.messages.length;
  const p = await product(b, { name: 'Second course' });
  const [user] = (await b.api('GET', `/api/v3/users?email=${gone}`)).body.data;
  await b.api('POST', '/api/v3/enrollments', {
    body: { user_id: user.id, product_id: p.id },
    key: newKey(),
  });
  const suppressed = await emailTo(b, gone, (r) => r.status !== 'queued');
  assert.equal([suppressed.status, suppressed.error], ['suppressed', 'address_bounced']);
  assert.is(server.messages.length, received);
});

smtp(
  'an address that received email leaves the bounce list with unbounce',
  async ({ b, server }) => {
    const { outbox } = b.app.services;
    const to = await welcome(b, 'back@example.com');
    await emailTo(b, to, (r) => r.status === 'sent');
    await outbox.bounce(b.accountId, to, 'mailbox full');
    assert.is(await outbox.isBounced(b.accountId, 'BACK@example.com'), true);
    await outbox.unbounce(b.accountId, 'Back@Example.com');
    assert.is(await outbox.isBounced(b.accountId, to), false);
    // Unbouncing an address that is not bounced changes nothing.
    await outbox.unbounce(b.accountId, to);
    assert.equal((await outbox.recipient(b.accountId, to))?.sentCount, 1);
    const p = await product(b, { name: 'Back again' });
    const [user] = (await b.api('GET', `/api/v3/users?email=${to}`)).body.data;
    await b.api('POST', '/api/v3/enrollments', {
      body: { user_id: user.id, product_id: p.id },
      key: newKey(),
    });
    await emailTo(b, to, (r) => r.status === 'sent' && r.subject === 'Welcome to Back again');
    assert.is(server.messages.filter((m) => m.to.includes(to)).length, 2);
  },
);

smtp('a transient refusal (451) is retried until it goes through', async ({ b, server }) => {
  let tries = 0;
  server.reply = (to) =>
    to === 'later@example.com' && ++tries === 1 ? '451 4.3.0 Try again later' : '250 OK';
  const to = await welcome(b, 'later@example.com');
  const row = await emailTo(b, to, (r) => r.status === 'sent');
  assert.is(row.attempts, 2);
  assert.is(tries, 2);
});

smtp.run();

const held = suite<{ b: Booted; server: SmtpServer }>('v3 sales: outbox of an account not active');
held.before(async (ctx) => {
  ctx.server = await smtpServer();
  ctx.b = await boot({ env: { SMTP_URL: `smtp://127.0.0.1:${ctx.server.port}` } });
});
held.after(async (ctx) => {
  await ctx.b.close();
  await ctx.server.close();
});

held(
  'a blocked school writes to nobody: its emails wait, then go once it is active',
  async (ctx) => {
    const { b, server } = ctx;
    const first = await welcome(b, 'held-1@example.com');
    const second = await welcome(b, 'held-2@example.com');
    const { accounts } = b.app.services;
    await accounts.setAccountStatus(b.accountId, 'blocked');
    await b.app.startWorkers();
    for (const to of [first, second]) {
      const row = await emailTo(b, to, (r) => r.status !== 'queued');
      // Held, not tried: its tries are kept for when it can go.
      assert.equal([row.status, row.attempts, row.error], ['held', 0, null]);
    }
    assert.is(server.messages.length, 0);

    // Another status that is not active holds them too; active again, each is sent once.
    await accounts.setAccountStatus(b.accountId, 'unavailable');
    await accounts.setAccountStatus(b.accountId, 'active');
    for (const to of [first, second]) {
      const row = await emailTo(b, to, (r) => r.status === 'sent');
      assert.is(row.attempts, 1);
    }
    await accounts.setAccountStatus(b.accountId, 'active');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(server.messages.map((m) => m.to.join()).sort(), [first, second]);
  },
);

held.run();
