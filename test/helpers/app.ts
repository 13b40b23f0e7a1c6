// Boots the real app on a random port with a fresh database: a SQLite file by default, or its own
// PostgreSQL schema when TEST_DATABASE_URL is set. Returns an HTTP client that validates every v3
// response against the contract.
import crypto from 'node:crypto';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import { createApp, loadSpec, type App } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { TestClock } from '../../src/clock.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger, type Logger } from '../../src/log.ts';
import { ContractChecker } from './contract.ts';

export interface Response {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is (for malformed bodies). */
  raw?: string | Buffer;
  headers?: Record<string, string>;
  /** Credential secret; `null` sends no Authorization header. Defaults to the root secret. */
  secret?: string | null;
  /** Idempotency-Key header. */
  key?: string;
}

export type Api = (method: string, path: string, options?: RequestOptions) => Promise<Response>;

export interface TestDatabase {
  db: Db;
  url: string;
  schema?: string;
  drop(): Promise<void>;
}

/** A fresh database for one suite. */
export async function freshDatabase(): Promise<TestDatabase> {
  const pg = process.env.TEST_DATABASE_URL;
  if (pg) {
    const schema = 't_' + crypto.randomBytes(6).toString('hex');
    const admin = knexFactory({ client: 'pg', connection: pg, pool: { min: 0, max: 1 } });
    await admin.raw(`CREATE SCHEMA "${schema}"`);
    await admin.destroy();
    return {
      db: createDb(pg, { schema }),
      url: pg,
      schema,
      async drop() {
        const a = knexFactory({ client: 'pg', connection: pg, pool: { min: 0, max: 1 } });
        // The job queue keeps its tables in a twin schema beside the suite's (src/jobs/pg.ts).
        await a.raw(`DROP SCHEMA IF EXISTS "${schema}", "${schema}_jobs" CASCADE`);
        await a.destroy();
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-test-'));
  const url = `sqlite:${path.join(dir, 'test.db')}`;
  return {
    db: createDb(url),
    url,
    async drop() {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface BootOptions {
  clock?: TestClock;
  spec?: any;
  env?: Record<string, string>;
  database?: TestDatabase;
  /** Where the app logs (default: nowhere); tests that read log lines pass their own. */
  logger?: Logger;
  /** Where /docs looks for the legacy contracts (default spec/legacy). */
  legacySpecDir?: string;
}

export interface Booted {
  app: App;
  url: string;
  clock: TestClock;
  accountId: number;
  credentialId: number;
  secret: string;
  api: Api;
  database: TestDatabase;
  close(): Promise<void>;
}

export function makeClient(
  baseUrl: string,
  defaultSecret: string | null,
  checker: ContractChecker,
): Api {
  return async (method, p, options = {}) => {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    const secret = options.secret === undefined ? defaultSecret : options.secret;
    if (secret && !Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) {
      headers.authorization = `Bearer ${secret}`;
    }
    if (options.key) headers['idempotency-key'] = options.key;
    let body: string | Uint8Array | undefined;
    if (options.raw !== undefined)
      body = typeof options.raw === 'string' ? options.raw : new Uint8Array(options.raw);
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    // Buffers are valid fetch bodies at run time; the DOM and Node typings disagree.
    const res = await fetch(baseUrl + p, { method, headers, body: body as any });
    const text = await res.text();
    const type = res.headers.get('content-type');
    const parsed =
      text && type?.startsWith('application/json') ? JSON.parse(text) : text ? text : undefined;
    if (p.startsWith('/api/v3')) checker.check(method, p, res.status, type, parsed);
    return { status: res.status, headers: res.headers, body: parsed, text };
  };
}

/** A port that was free a moment ago: the server must know its own URL before it listens. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function boot(options: BootOptions = {}): Promise<Booted> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const clock = options.clock ?? new TestClock();
  const database = options.database ?? (await freshDatabase());
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATABASE_URL: database.url,
    RATE_LIMIT_SOURCE: '100000',
    RATE_LIMIT_ACCOUNT: '100000',
    RATE_LIMIT_CREDENTIAL: '100000',
    PUBLIC_BASE_URL: url,
    // The test runner's cheap password hashes (scripts/test.ts), for servers built in-process too.
    PASSWORD_HASH_COST: process.env.PASSWORD_HASH_COST,
    ...options.env,
  });
  const spec = options.spec ?? loadSpec();
  const app = await createApp(config, {
    clock,
    db: database.db,
    spec,
    logger: options.logger ?? createLogger((process.env.TEST_LOG_LEVEL as any) ?? 'silent'),
    legacySpecDir: options.legacySpecDir,
  });
  await app.listen(port, '127.0.0.1');
  const { id: accountId } = await app.services.accounts.createAccount({ name: 'Test school' });
  const root = await app.services.accounts.createRootCredential({
    accountId,
    permissions: ['*'],
    name: 'Root',
  });
  const checker = new ContractChecker(spec);
  return {
    app,
    url,
    clock,
    accountId,
    credentialId: root.id,
    secret: root.secret,
    api: makeClient(url, root.secret, checker),
    database,
    async close() {
      await app.close();
      if (!options.database) await database.drop();
    },
  };
}

/** A credential with exactly these permissions on the booted account. */
export async function credentialWith(
  b: Booted,
  permissions: string[],
  extra: { authMode?: any } = {},
) {
  return b.app.services.accounts.createRootCredential({
    accountId: b.accountId,
    permissions,
    ...extra,
  });
}

let keyCounter = 0;
export const newKey = () => `test-${process.pid}-${Date.now()}-${++keyCounter}`;
