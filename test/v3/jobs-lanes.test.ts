// The job queue's lanes (src/jobs/lanes.ts): an export completes while thousands of emails wait to
// be sent. The emails go to an SMTP server that accepts connections and never greets, so each
// email job holds its slot for nodemailer's 30 s greeting timeout; in one FIFO queue of four slots
// the export's job sat behind all of them.
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { transaction } from '../../src/db/tx.ts';
import { newKey } from '../helpers/app.ts';
import { bootFiles, type FilesBoot } from '../helpers/files.ts';
import { waitFor } from '../helpers/operations.ts';
import { student } from '../helpers/sales.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { createWebhook } from '../helpers/webhooks.ts';

const EMAILS = 3000;

interface Ctx {
  b: FilesBoot;
  smtp: net.Server;
  sockets: Set<net.Socket>;
}

const t = suite<Ctx>('job lanes');
t.before(async (ctx) => {
  ctx.sockets = new Set();
  ctx.smtp = net.createServer((socket) => {
    ctx.sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => ctx.smtp.listen(0, '127.0.0.1', resolve));
  const port = (ctx.smtp.address() as net.AddressInfo).port;
  ctx.b = await bootFiles('local', {
    env: { SMTP_URL: `smtp://127.0.0.1:${port}`, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
  });
});
t.after(async (ctx) => {
  // Connections dropped: the stalled sends fail at once (and are retried later) so the workers stop.
  ctx.smtp.close();
  for (const s of ctx.sockets) s.destroy();
  await ctx.b.close();
});

t('a users export completes while thousands of email jobs are pending', async (ctx) => {
  const { b } = ctx;
  const ana = await student(b, 'ana@example.com', 'Ana');
  const outbox = b.app.services.outbox;
  await transaction(b.app.services.db, async (tx) => {
    for (let i = 0; i < EMAILS; i++)
      await outbox.queue(
        { tx },
        {
          accountId: b.accountId,
          userId: Number(ana.id),
          to: `ana+${i}@example.com`,
          kind: 'enrollment.welcome',
          subject: 'Welcome',
          body: 'Hello',
        },
      );
  });
  await b.app.startWorkers();
  // The email lane is busy: its four slots wait on the silent SMTP server.
  for (const deadline = Date.now() + 10_000; ctx.sockets.size < 4 && Date.now() < deadline;)
    await new Promise((r) => setTimeout(r, 20));
  assert.is(ctx.sockets.size >= 4, true, `${ctx.sockets.size} SMTP connections`);

  const res = await b.api('POST', '/api/v3/exports', {
    body: { resource: 'users', columns: ['email'] },
    key: newKey(),
  });
  assert.is(res.status, 202, JSON.stringify(res.body));
  // Well within the 30 s that one round of stalled emails takes.
  const op = await waitFor(b, res.body.data.operation_id, undefined, undefined, 20_000);
  assert.is(op.status, 'succeeded');
  const e = (await b.api('GET', `/api/v3/exports/${res.body.data.id}`)).body.data;
  assert.is(e.status, 'completed');
  assert.is(e.total, 1);
  const queued = await b.app.services
    .db('emails')
    .where({ account_id: b.accountId, status: 'queued' })
    .count({ n: '*' });
  assert.is(Number(queued[0]!.n), EMAILS, 'every email still waits: none was sent');
});

t('a webhook delivery goes out while the email lane is still stalled', async (ctx) => {
  const { b } = ctx;
  const rcv = await startReceiver();
  try {
    await createWebhook(b, rcv.url, { event_types: ['user.created'] });
    const bia = await student(b, 'bia@example.com', 'Bia');
    // Its own lane: not behind the four stalled sends (each holds its slot for 30 s).
    const [got] = await rcv.waitFor(1, 20_000);
    assert.is(JSON.parse(got!.body).data.user.id, bia.id);
    assert.is(ctx.sockets.size >= 4, true, 'the emails still hold their connections');
  } finally {
    await rcv.close();
  }
});

t.run();
