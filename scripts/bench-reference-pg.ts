// The bench's PostgreSQL yardstick (npm run bench with BENCH_DATABASE_URL): bare Koa + @koa/router
// + `pg`, the same two routes as scripts/bench-reference.ts:
//   GET  /users/:id  one SELECT by primary key, the row as JSON
//   POST /users      parse the JSON body, one INSERT ... RETURNING * (autocommit), 201 with the row
// over a pg.Pool of BENCH_REF_POOL_MAX connections (the bench gives the app the same number as
// DATABASE_POOL_MAX). Statements are named, so each connection parses and plans them once.
// Env: BENCH_REF_DATABASE_URL, BENCH_REF_DATABASE_SCHEMA (an empty schema the caller created and
// drops), BENCH_REF_POOL_MAX. Prints `BENCH_READY {"port","userId"}`, then bench/child-control.ts.
import crypto from 'node:crypto';
import Koa from 'koa';
import Router from '@koa/router';
import pg from 'pg';
import { serveReference, userPost } from '../bench/reference-server.ts';

const url = process.env.BENCH_REF_DATABASE_URL;
const schema = process.env.BENCH_REF_DATABASE_SCHEMA;
if (!url || !schema)
  throw new Error('BENCH_REF_DATABASE_URL and BENCH_REF_DATABASE_SCHEMA are required');
const pool = new pg.Pool({
  connectionString: url,
  max: Number(process.env.BENCH_REF_POOL_MAX || 10),
  options: `-c search_path="${schema}"`,
});

// The same columns and indexes as the platform's users table.
await pool.query(`CREATE TABLE users (
  id SERIAL PRIMARY KEY,
  account_id INTEGER NOT NULL,
  name VARCHAR(200) NOT NULL,
  email VARCHAR(320) NOT NULL,
  email_lower VARCHAR(320) NOT NULL,
  phone VARCHAR(40),
  document VARCHAR(20),
  job_title VARCHAR(200),
  company_name VARCHAR(200),
  company_size VARCHAR(50),
  free BOOLEAN NOT NULL DEFAULT false,
  points INTEGER NOT NULL DEFAULT 0,
  auto_login_token VARCHAR(64) NOT NULL,
  utm TEXT NOT NULL,
  started_at VARCHAR(32),
  last_access_at VARCHAR(32),
  revision VARCHAR(32) NOT NULL,
  created_at VARCHAR(32) NOT NULL,
  updated_at VARCHAR(32) NOT NULL,
  UNIQUE (account_id, email_lower)
);
CREATE INDEX ON users (account_id, created_at, id)`);

const INSERT = `INSERT INTO users (account_id, name, email, email_lower, auto_login_token, utm,
  revision, created_at, updated_at) VALUES (1, $1, $2, $3, $4, '{}', $5, $6, $7) RETURNING *`;
const now = new Date().toISOString();
const seeded = await pool.query(INSERT, [
  'Ana Souza',
  'ana@example.com',
  'ana@example.com',
  't'.repeat(43),
  'r'.repeat(22),
  now,
  now,
]);
const userId = Number(seeded.rows[0].id);

const router = new Router();
router.get('/users/:id', async (ctx) => {
  const { rows } = await pool.query({
    name: 'user_by_id',
    text: 'SELECT * FROM users WHERE id = $1',
    values: [Number(ctx.params.id)],
  });
  if (!rows[0]) {
    ctx.status = 404;
    ctx.body = { error: { code: 'not_found' } };
    return;
  }
  ctx.body = rows[0];
});
router.post('/users', async (ctx) => {
  const body = await userPost(ctx);
  if (!body) return;
  const at = new Date().toISOString();
  const token = crypto.randomBytes(32).toString('base64url');
  const revision = crypto.randomBytes(16).toString('base64url');
  const { rows } = await pool.query({
    name: 'user_insert',
    text: INSERT,
    values: [body.name, body.email, body.email.toLowerCase(), token, revision, at, at],
  });
  ctx.status = 201;
  ctx.body = rows[0];
});

const koa = new Koa();
koa.use(router.routes());
await serveReference(koa, userId, () => pool.end());
