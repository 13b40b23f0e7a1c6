// The bench's second POST yardstick (npm run bench, issue #20): bare Koa + @koa/router +
// better-sqlite3 doing the durable work the specification requires of POST /api/v3/users, and
// nothing else. The database is the app's own schema (its migrations: the same tables, indexes,
// foreign keys and the audit trail's attached file, WAL, synchronous NORMAL), and each request
// writes, in one transaction, the four rows the app writes: the student (with its indexes), its
// user.created event, the idempotency record holding the response, and the audit entry. No
// authentication, limits, validation beyond "name and email are strings", webhooks or
// notifications: what the pipeline costs above the required writes is measured against this.
//   POST /users  {"name","email"} with an Idempotency-Key header -> 201 with the row
// Prints `BENCH_READY {"port"}`, then takes bench/child-control.ts's commands on stdin.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Router from '@koa/router';
import Database from 'better-sqlite3';
import Koa from 'koa';
import { serveReference, userPost } from '../bench/reference-server.ts';
import { auditFilename, createDb } from '../src/db/knex.ts';
import { migrate } from '../src/db/migrate.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-durable-'));
const file = path.join(dir, 'reference.db');
// The app's schema, built by its migrations, then left to better-sqlite3 alone.
const knex = createDb(`sqlite:${file}`);
await migrate(knex);
await knex.destroy();

const db = new Database(file);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
db.prepare('ATTACH DATABASE ? AS audit').run(auditFilename(file));
db.pragma('audit.journal_mode = WAL');
db.pragma('audit.synchronous = NORMAL');
const now = new Date().toISOString();
const accountId = Number(
  db.prepare('INSERT INTO accounts (name, created_at) VALUES (?, ?)').run('Bench', now)
    .lastInsertRowid,
);

const insertUser = db.prepare(
  `INSERT INTO users (account_id, name, email, email_lower, auto_login_token, utm, revision,
     created_at, updated_at)
   VALUES (?, ?, ?, ?, ?, '{}', ?, ?, ?) RETURNING *`,
);
const insertEvent = db.prepare(
  `INSERT INTO events (account_id, type, version, data, created_at)
   VALUES (?, 'user.created', '1', ?, ?)`,
);
const insertKey = db.prepare(
  `INSERT INTO idempotency_keys (credential_id, key, request_hash, state, owner, locked_at,
     created_at, response_status, response_headers, response_body, replayable)
   VALUES (1, ?, ?, 'completed', ?, ?, ?, 201, '{}', ?, 1)`,
);
const insertAudit = db.prepare(
  `INSERT INTO audit.audit_entries (request_id, account_id, credential_id, method, route,
     operation_id, path, status, duration_ms, ip, created_at)
   VALUES (?, ?, 1, 'POST', '/users', 'createUser', '/users', 201, 0, '127.0.0.1', ?)`,
);

const create = db.transaction((name: string, email: string, key: string, raw: string) => {
  const at = new Date().toISOString();
  const token = crypto.randomBytes(32).toString('base64url');
  const revision = crypto.randomBytes(16).toString('base64url');
  const user = insertUser.get(accountId, name, email, email.toLowerCase(), token, revision, at, at);
  const body = JSON.stringify(user);
  insertEvent.run(accountId, JSON.stringify({ user }), at);
  const hash = crypto.createHash('sha256').update(raw).digest('hex');
  insertKey.run(key, hash, crypto.randomBytes(8).toString('hex'), at, at, body);
  insertAudit.run(crypto.randomBytes(12).toString('hex'), accountId, at);
  return body;
});

const router = new Router();
router.post('/users', async (ctx) => {
  const post = await userPost(ctx, true);
  if (!post) return;
  ctx.status = 201;
  ctx.type = 'application/json';
  ctx.body = create(post.name, post.email, post.key, post.raw);
});

const koa = new Koa();
koa.use(router.routes());
await serveReference(koa, 0, () => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
