// Event streams fanned out (issue #20): 20 open streams of one account (the account's limit: four
// credentials with five each), then a burst of events recorded in transactions of 10; events/s is
// how many events per second every one of the 20 streams received (from the first commit until
// the last stream has them all), with each event's commit-to-arrival p50/p99 over all streams.
// The real app (createApp, HTTP, Server-Sent Events) on a fresh database, in this process.
// Prints one JSON line on stdout:
//   {"engine","streams","events","seconds","eventsPerSecond","sent","p50","p99"}
//
//   node bench/streams.ts [database=sqlite] [events=2000]
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { transaction } from '../src/db/tx.ts';
import { createBenchSchema } from './pg-schema.ts';

const database = process.argv[2] ?? 'sqlite';
const EVENTS = Number(process.argv[3] ?? 2000);
const STREAMS = 20;
const PER_TX = 10;
const postgres = database.startsWith('postgres');
const now = () => performance.timeOrigin + performance.now();
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-streams-'));
const schema = postgres ? await createBenchSchema(database) : null;
const app = await createApp(
  loadConfig({
    DATABASE_URL: postgres ? database : `sqlite:${path.join(dir, 'streams.db')}`,
    DATABASE_SCHEMA: schema?.schema,
    FILES_DIR: path.join(dir, 'files'),
    SECRETS_KEY: crypto.randomBytes(32).toString('base64url'),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_SOURCE: '100000000',
    RATE_LIMIT_ACCOUNT: '100000000',
    RATE_LIMIT_CREDENTIAL: '100000000',
  }),
);
const port = await app.listen(0, '127.0.0.1');
const base = `http://127.0.0.1:${port}`;
const sockets: http.ClientRequest[] = [];
try {
  const { accounts, events } = app.services;
  const { id: accountId } = await accounts.createAccount({ name: 'Bench school' });
  /** Commit time of each event id (ms), and its arrival times at the streams. */
  const committed = new Map<string, number>();
  const latencies: number[] = [];
  const counts: number[] = [];
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  let complete = 0;
  for (let c = 0; c < STREAMS / 5; c++) {
    const { secret } = await accounts.createRootCredential({
      accountId,
      name: `Bench ${c}`,
      permissions: ['*'],
    });
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    for (let s = 0; s < 5; s++) {
      const created = await fetch(`${base}/api/v3/event-streams`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': crypto.randomUUID() },
        body: '{}',
      });
      if (created.status !== 201)
        throw new Error(`stream: ${created.status} ${await created.text()}`);
      const id = ((await created.json()) as { data: { id: string } }).data.id;
      const index = counts.push(0) - 1;
      await new Promise<void>((ready, fail) => {
        const req = http.get(
          `${base}/api/v3/event-streams/${id}/events`,
          { headers: { authorization: headers.authorization, accept: 'text/event-stream' } },
          (res) => {
            if (res.statusCode !== 200) return fail(new Error(`events: ${res.statusCode}`));
            res.setEncoding('utf8');
            let buffer = '';
            res.on('data', (chunk: string) => {
              buffer += chunk;
              let at: number;
              while ((at = buffer.indexOf('\n')) >= 0) {
                const line = buffer.slice(0, at);
                buffer = buffer.slice(at + 1);
                if (!line.startsWith('id:')) continue;
                const t = committed.get(line.slice(3).trim());
                if (t !== undefined) latencies.push(now() - t);
                if (++counts[index]! === EVENTS && ++complete === STREAMS) done();
              }
            });
            ready();
          },
        );
        req.on('error', fail);
        sockets.push(req);
      });
    }
  }
  await events.listening();
  const started = now();
  for (let i = 0; i < EVENTS; i += PER_TX) {
    const ids = await transaction(app.db, async (tx) => {
      const out: number[] = [];
      for (let j = i; j < Math.min(EVENTS, i + PER_TX); j++) {
        const e = await events.record(
          { tx },
          {
            accountId,
            type: 'tag.removed',
            data: { user_id: String(j + 1), tag: { id: '1', name: `t${j}` } },
          },
        );
        out.push(e.id);
      }
      return out;
    });
    const t = now();
    for (const id of ids) committed.set(String(id), t);
  }
  const sent = now();
  const timeout = setTimeout(() => {
    console.error(`streams: not every stream had every event after 120 s: ${counts.join(',')}`);
    process.exit(1);
  }, 120_000);
  await all;
  clearTimeout(timeout);
  const seconds = (now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      engine: postgres ? 'postgres' : 'sqlite',
      streams: STREAMS,
      events: EVENTS,
      seconds: Math.round(seconds * 1000) / 1000,
      eventsPerSecond: Math.round(EVENTS / seconds),
      recordedPerSecond: Math.round(EVENTS / ((sent - started) / 1000)),
      p50: Math.round(pct(latencies, 50) * 100) / 100,
      p99: Math.round(pct(latencies, 99) * 100) / 100,
    }),
  );
} finally {
  for (const s of sockets) s.destroy();
  await app.close();
  await schema?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
}
