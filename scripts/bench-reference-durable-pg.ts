// The bench's second PostgreSQL POST yardstick (npm run bench with BENCH_DATABASE_URL, issue #20):
// bare Koa + @koa/router + `pg` doing the durable work the specification requires of
// POST /api/v3/users, and nothing else, as scripts/bench-reference-durable.ts does on SQLite. The
// schema is the app's own (its migrations: the same tables, indexes and foreign keys), and each
// request writes, in one transaction on one pooled connection, the four rows the app writes: the
// student (with its indexes), its user.created event, the idempotency record holding the response
// and the audit entry: BEGIN, four named INSERTs, COMMIT (six round trips; no authentication,
// limits, validation beyond "name and email are strings", webhooks or notifications).
//   POST /users  {"name","email"} with an Idempotency-Key header -> 201 with the row
// Env: BENCH_REF_DATABASE_URL, BENCH_REF_DATABASE_SCHEMA (an empty schema the caller created and
// drops), BENCH_REF_POOL_MAX. Prints `BENCH_READY {"port","userId"}`, then bench/child-control.ts.
import crypto from 'node:crypto';
import Koa from 'koa';
import Router from '@koa/router';
import pg from 'pg';
import { serveReference, userPost } from '../bench/reference-server.ts';
import { createDb } from '../src/db/knex.ts';
import { migrate } from '../src/db/migrate.ts';

const url = process.env.BENCH_REF_DATABASE_URL;
const schema = process.env.BENCH_REF_DATABASE_SCHEMA;
if (!url || !schema)
  throw new Error('BENCH_REF_DATABASE_URL and BENCH_REF_DATABASE_SCHEMA are required');

// The app's schema, built by its migrations, then left to `pg` alone.
const knex = createDb(url, { schema });
await migrate(knex);
await knex.destroy();

const pool = new pg.Pool({
  connectionString: url,
  max: Number(process.env.BENCH_REF_POOL_MAX || 10),
  options: `-c search_path="${schema}"`,
});
const now = new Date().toISOString();
const account = await pool.query(
  'INSERT INTO accounts (name, created_at) VALUES ($1, $2) RETURNING id',
  ['Bench', now],
);
const accountId = Number(account.rows[0].id);

const INSERT_USER = `INSERT INTO users (account_id, name, email, email_lower, auto_login_token,
  utm, revision, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, '{}', $6, $7, $8) RETURNING *`;
const INSERT_EVENT = `INSERT INTO events (account_id, type, version, data, created_at)
  VALUES ($1, 'user.created', '1', $2, $3)`;
const INSERT_KEY = `INSERT INTO idempotency_keys (credential_id, key, request_hash, state, owner,
  locked_at, created_at, response_status, response_headers, response_body, replayable)
  VALUES (1, $1, $2, 'completed', $3, $4, $5, 201, '{}', $6, true)`;
const INSERT_AUDIT = `INSERT INTO audit_entries (request_id, account_id, credential_id, method,
  route, operation_id, path, status, duration_ms, ip, created_at)
  VALUES ($1, $2, 1, 'POST', '/users', 'createUser', '/users', 201, 0, '127.0.0.1', $3)`;

async function create(name: string, email: string, key: string, raw: string): Promise<string> {
  const at = new Date().toISOString();
  const token = crypto.randomBytes(32).toString('base64url');
  const revision = crypto.randomBytes(16).toString('base64url');
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query({
      name: 'user_insert',
      text: INSERT_USER,
      values: [accountId, name, email, email.toLowerCase(), token, revision, at, at],
    });
    const body = JSON.stringify(rows[0]);
    await client.query({
      name: 'event_insert',
      text: INSERT_EVENT,
      values: [accountId, JSON.stringify({ user: rows[0] }), at],
    });
    const hash = crypto.createHash('sha256').update(raw).digest('hex');
    await client.query({
      name: 'key_insert',
      text: INSERT_KEY,
      values: [key, hash, crypto.randomBytes(8).toString('hex'), at, at, body],
    });
    await client.query({
      name: 'audit_insert',
      text: INSERT_AUDIT,
      values: [crypto.randomBytes(12).toString('hex'), accountId, at],
    });
    await client.query('COMMIT');
    return body;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

const router = new Router();
router.post('/users', async (ctx) => {
  const post = await userPost(ctx, true);
  if (!post) return;
  ctx.status = 201;
  ctx.type = 'application/json';
  ctx.body = await create(post.name, post.email, post.key, post.raw);
});

const koa = new Koa();
koa.use(router.routes());
await serveReference(koa, 0, () => pool.end());
