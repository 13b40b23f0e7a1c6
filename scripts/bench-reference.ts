// The bench's yardstick (npm run bench): a bare Koa + @koa/router + better-sqlite3 (WAL) server.
//   GET  /users/:id  reads one row by primary key and returns it as JSON
//   POST /users      reads and parses the JSON body ({"name","email"}), inserts one row (one
//                    INSERT ... RETURNING per request, autocommit) and answers 201 with it
// No authentication, limits, idempotency, audit or validation beyond "name and email are strings":
// what the platform's pipeline costs is measured against this. Run as a child process by
// scripts/bench.ts; prints `BENCH_READY {"port","userId"}` on stdout, then takes the commands of
// bench/child-control.ts on stdin and stops when stdin closes or on SIGTERM/SIGINT.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Koa from 'koa';
import Router from '@koa/router';
import Database from 'better-sqlite3';
import { serveReference, userPost } from '../bench/reference-server.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-ref-'));
const db = new Database(path.join(dir, 'reference.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');

// The same columns as the platform's users table, so both servers return a row of similar size.
db.exec(`CREATE TABLE users (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id INTEGER NOT NULL,
  name VARCHAR(200) NOT NULL,
  email VARCHAR(320) NOT NULL,
  email_lower VARCHAR(320) NOT NULL,
  phone VARCHAR(40),
  document VARCHAR(20),
  job_title VARCHAR(200),
  company_name VARCHAR(200),
  company_size VARCHAR(50),
  free BOOLEAN NOT NULL DEFAULT 0,
  points INTEGER NOT NULL DEFAULT 0,
  auto_login_token VARCHAR(64) NOT NULL,
  utm TEXT NOT NULL,
  started_at VARCHAR(32),
  last_access_at VARCHAR(32),
  revision VARCHAR(32) NOT NULL,
  created_at VARCHAR(32) NOT NULL,
  updated_at VARCHAR(32) NOT NULL
)`);
const now = new Date().toISOString();
const { lastInsertRowid } = db
  .prepare(
    `INSERT INTO users (account_id, name, email, email_lower, auto_login_token, utm, revision,
       created_at, updated_at)
     VALUES (1, 'Ana Souza', 'ana@example.com', 'ana@example.com', ?, '{}', ?, ?, ?)`,
  )
  .run('t'.repeat(43), 'r'.repeat(22), now, now);
const userId = Number(lastInsertRowid);

const byId = db.prepare('SELECT * FROM users WHERE id = ?');
const insert = db.prepare(
  `INSERT INTO users (account_id, name, email, email_lower, auto_login_token, utm, revision,
     created_at, updated_at)
   VALUES (1, ?, ?, ?, ?, '{}', ?, ?, ?)
   RETURNING *`,
);

const router = new Router();
router.get('/users/:id', (ctx) => {
  const row = byId.get(Number(ctx.params.id));
  if (!row) {
    ctx.status = 404;
    ctx.body = { error: { code: 'not_found' } };
    return;
  }
  ctx.body = row;
});
router.post('/users', async (ctx) => {
  const body = await userPost(ctx);
  if (!body) return;
  const at = new Date().toISOString();
  const token = crypto.randomBytes(32).toString('base64url');
  const revision = crypto.randomBytes(16).toString('base64url');
  ctx.status = 201;
  ctx.body = insert.get(body.name, body.email, body.email.toLowerCase(), token, revision, at, at);
});

const koa = new Koa();
koa.use(router.routes());
await serveReference(koa, userId, () => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
