// Experiments for profiling the v3 pipeline without editing src/: BENCH_ABLATE (comma-separated)
// swaps pieces of a booted app, at run time, for no-ops or for prototypes of a faster design. The
// bench flags any run that uses them: they are measurements of "what if", not the product.
//
// No-ops (what a piece costs):
//   audit       the audit insert after every request
//   ratelimit   the three rate-limiter consumptions
//   authcache   the credential lookup (served from memory, re-read once a second)
// Prototypes (same SQL and results, different execution):
//   prepared    the hot-path statements of GET /users/{id} and POST /users (credential lookup,
//               user by id / by email, user insert, audit insert, idempotency lock and complete)
//               run as cached better-sqlite3 prepared statements on the connection knex would use
//               (the pooled one, acquired and released through the pool, or the transaction's),
//               instead of through the knex query builder. BEGIN/COMMIT stay with knex.
//   groupaudit  audit inserts are group-committed: entries queued in one event-loop turn are
//               written in one transaction; each request still waits for its entry to be durable
//               (fail-closed as before)
// Diagnostics:
//   nockpt      PRAGMA wal_autocheckpoint = 0: no checkpoint (with its fsyncs) inside a request;
//               the WAL grows for the run's duration. Tells whether tail latency is checkpoints.
import type { App } from '../src/app.ts';
import { bool } from '../src/db/dialect.ts';
import { auditRepo, auditRow } from '../src/domain/audit/repo.ts';
import { credentialsRepo } from '../src/domain/credentials/repo.ts';
import { idempotencyRepo } from '../src/domain/idempotency/repo.ts';
import { newUserRow, usersRepo } from '../src/domain/users/repo.ts';
import { isUniqueViolation } from '../src/db/dialect.ts';
import type { Tx } from '../src/db/knex.ts';

export const ABLATIONS = [
  'audit',
  'ratelimit',
  'authcache',
  'prepared',
  'groupaudit',
  'nockpt',
] as const;

interface Statement {
  get(...params: unknown[]): any;
  run(...params: unknown[]): { lastInsertRowid: number | bigint; changes: number };
}
interface Connection {
  prepare(sql: string): Statement;
  transaction<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void;
}

/**
 * Runs fn with a statement prepared once per connection: the pooled one for the root handle
 * (through the pool, so serialized with knex), the transaction's own one for a transaction.
 */
function preparedRunner(app: App) {
  const caches = new WeakMap<object, Map<string, Statement>>();
  return async function withStatement<T>(
    sql: string,
    fn: (stmt: Statement, conn: Connection) => T,
    tx: Tx = app.db,
  ): Promise<T> {
    const client = tx.client as any;
    const conn = (await client.acquireConnection()) as Connection;
    try {
      let cache = caches.get(conn);
      if (!cache) caches.set(conn, (cache = new Map()));
      let stmt = cache.get(sql);
      if (!stmt) cache.set(sql, (stmt = conn.prepare(sql)));
      return fn(stmt, conn);
    } finally {
      await client.releaseConnection(conn);
    }
  };
}

/** knex's better-sqlite3 binding rules: booleans as 0/1, dates as epoch ms. */
const binding = (v: unknown) =>
  typeof v === 'boolean' ? Number(v) : v instanceof Date ? v.valueOf() : v;

const AUTH_SQL =
  'select c.*, a.sandbox as account_sandbox, a.status as account_status from credentials as c ' +
  'inner join accounts as a on a.id = c.account_id where c.secret_hash = ? limit 1';
const USER_SQL = 'select * from users where account_id = ? and id = ? limit 1';
const AUDIT_SQL =
  'insert into audit_entries (request_id, account_id, credential_id, admin_id, method, route, ' +
  'operation_id, path, status, duration_ms, ip, created_at) values (@request_id, @account_id, ' +
  '@credential_id, @admin_id, @method, @route, @operation_id, @path, @status, @duration_ms, @ip, ' +
  '@created_at)';

export async function applyAblations(app: App, pieces: string[], limit: number): Promise<void> {
  const { services } = app;
  const withStatement = preparedRunner(app);
  for (const piece of pieces) {
    if (piece === 'audit') {
      services.audit.record = async () => undefined;
    } else if (piece === 'ratelimit') {
      const state = { limit, remaining: limit, resetSeconds: 60 };
      services.rateLimits.consume = async () => state;
    } else if (piece === 'authcache') {
      // Re-read at most once a second, so credentials.touch still sees a fresh last_used_at.
      const original = services.credentials.findBySecret.bind(services.credentials);
      const cache = new Map<string, { at: number; value: Awaited<ReturnType<typeof original>> }>();
      services.credentials.findBySecret = async (secret) => {
        const hit = cache.get(secret);
        if (hit && Date.now() - hit.at < 1000) return hit.value;
        const value = await original(secret);
        cache.set(secret, { at: Date.now(), value });
        return value;
      };
    } else if (piece === 'prepared') {
      const find = credentialsRepo.findBySecretHash;
      credentialsRepo.findBySecretHash = async ({ tx }, hash) => {
        if (tx !== app.db) return find({ tx }, hash);
        const r = await withStatement(AUTH_SQL, (s) => s.get(hash));
        if (!r) return null;
        return {
          credential: credentialsRepo.map(r),
          account: {
            id: Number(r.account_id),
            sandbox: bool(r.account_sandbox),
            status: r.account_status,
          },
        };
      };
      usersRepo.get = async ({ tx }, accountId, id) => {
        const r = await withStatement(USER_SQL, (s) => s.get(accountId, id), tx);
        return r ? usersRepo.map(r) : null;
      };
      usersRepo.findByEmail = async ({ tx }, accountId, emailLower) => {
        const sql = 'select * from users where account_id = ? and email_lower = ? limit 1';
        const r = await withStatement(sql, (s) => s.get(accountId, emailLower), tx);
        return r ? usersRepo.map(r) : null;
      };
      usersRepo.create = async ({ tx }, user, now) => {
        const row = newUserRow(user, now);
        const cols = Object.keys(row).sort();
        const sql = `insert into users (${cols.join(', ')}) values (${cols.map(() => '?').join(', ')})`;
        const res = await withStatement(sql, (s) => s.run(...cols.map((c) => binding(row[c]))), tx);
        return (await usersRepo.get({ tx }, user.accountId, Number(res.lastInsertRowid)))!;
      };
      idempotencyRepo.tryLock = async ({ tx }, row) => {
        const sql =
          'insert into idempotency_keys (credential_id, key, request_hash, state, owner, ' +
          "locked_at, created_at) values (?, ?, ?, 'in_progress', ?, ?, ?)";
        try {
          await withStatement(
            sql,
            (s) => s.run(row.credentialId, row.key, row.hash, row.owner, row.now, row.now),
            tx,
          );
          return true;
        } catch (err) {
          if (isUniqueViolation(err)) return false;
          throw err;
        }
      };
      idempotencyRepo.complete = async ({ tx }, credentialId, key, owner, res) => {
        const sql =
          "update idempotency_keys set state = 'completed', response_status = ?, " +
          'response_headers = ?, response_body = ?, replayable = ? where credential_id = ? and key = ? ' +
          "and owner = ? and state = 'in_progress'";
        const info = await withStatement(
          sql,
          (s) =>
            s.run(
              res.status,
              JSON.stringify(res.headers),
              res.body,
              Number(res.replayable),
              credentialId,
              key,
              owner,
            ),
          tx,
        );
        return info.changes;
      };
      auditRepo.insertMany = async ({ tx }, entries) => {
        await withStatement(AUDIT_SQL, (s) => entries.forEach((e) => s.run(auditRow(e))), tx);
      };
    } else if (piece === 'groupaudit') {
      let queue: { row: ReturnType<typeof auditRow>; done: (err?: unknown) => void }[] = [];
      const flush = async () => {
        const batch = queue;
        queue = [];
        try {
          await withStatement(AUDIT_SQL, (stmt, conn) =>
            conn.transaction(() => {
              for (const b of batch) stmt.run(b.row);
            })(),
          );
          for (const b of batch) b.done();
        } catch (err) {
          for (const b of batch) b.done(err ?? new Error('audit batch failed'));
        }
      };
      services.audit.record = (entry) =>
        new Promise<void>((resolve, reject) => {
          if (queue.length === 0) setImmediate(() => void flush());
          queue.push({ row: auditRow(entry), done: (err) => (err ? reject(err) : resolve()) });
        });
    } else if (piece === 'nockpt') {
      await withStatement('PRAGMA wal_autocheckpoint = 0', (s) => s.run());
    } else {
      throw new Error(`BENCH_ABLATE: unknown piece ${piece} (${ABLATIONS.join(', ')})`);
    }
  }
}
