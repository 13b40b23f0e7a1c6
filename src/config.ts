// The only reader of process.env. Everything else receives a frozen Config.
import path from 'node:path';
import { ConfigError } from './startup.ts';
import { PER_ENDPOINT } from './domain/webhooks/schedule.ts';

export interface Config {
  host: string;
  port: number;
  databaseUrl: string;
  /** PostgreSQL: the schema to use instead of the role's search_path (one database, several schools or test suites). */
  databaseSchema: string | undefined;
  /** PostgreSQL: connections of each process's pool (DATABASE_POOL_MAX); SQLite has one. */
  databasePoolMax: number;
  /** PostgreSQL behind a transaction pooler: a direct (session) URL for LISTEN and the job queue. */
  databaseSessionUrl: string | undefined;
  publicBaseUrl: string;
  filesDir: string;
  /** s3://bucket?endpoint=...&region=...: files in S3-compatible storage; unset: FILES_DIR. */
  storageUrl: string | undefined;
  dataDir: string;
  workers: boolean;
  logLevel: string;
  /** `pretty` (readable lines, for a terminal) or `json` (one object a line, for collectors). */
  logFormat: 'json' | 'pretty';
  rateLimit: { source: number; account: number; credential: number };
  webhookAllowPrivateTargets: boolean;
  /** Attempts under way at once per webhook endpoint, across instances (WEBHOOK_PER_ENDPOINT). */
  webhookPerEndpoint: number;
  secretsKey: string | undefined;
  /** smtp(s)://user:pass@host:port: the outbox sends through it; unset, emails go to the log. */
  smtpUrl: string | undefined;
  /** The From of every email the platform sends. */
  emailFrom: string;
  /** Prometheus metrics on their own listener (HOST:METRICS_PORT); undefined: no listener. */
  metricsPort: number | undefined;
  /** Audit entries older than this are swept (sweep.audit). */
  auditRetentionDays: number;
  /**
   * Reverse proxies (load balancers) in front that append the client's address to
   * X-Forwarded-For; 0 (the default) ignores the header, which any client can send.
   */
  trustProxy: number;
  /**
   * log2 of scrypt's N for new administrator password hashes (PASSWORD_HASH_COST, 10 to 20,
   * default 15: about 100 ms a hash). Existing hashes keep the cost they were made with.
   */
  passwordHashCost: number;
}

function int(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n))
    throw new ConfigError(name, `'${value}' is not a whole number (0 or more)`);
  return n;
}

/** A count that must be at least 1 (0 connections would hang every request). */
function positive(value: string | undefined, fallback: number, name: string, max: number): number {
  return between(value, fallback, name, 1, max);
}

function between(
  value: string | undefined,
  fallback: number,
  name: string,
  min: number,
  max: number,
): number {
  const n = int(value, fallback, name);
  if (n < min || n > max)
    throw new ConfigError(name, `'${value}' is not between ${min} and ${max}`);
  return n;
}

const TRUE = ['1', 'true', 'yes', 'on'];
const FALSE = ['0', 'false', 'no', 'off'];

/** A yes/no variable: anything but the usual spellings is refused, never silently false. */
function bool(value: string | undefined, fallback: boolean, name: string): boolean {
  if (value === undefined || value === '') return fallback;
  const v = value.trim().toLowerCase();
  if (TRUE.includes(v)) return true;
  if (FALSE.includes(v)) return false;
  throw new ConfigError(name, `'${value}' is not one of true/false, 1/0, yes/no, on/off`);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** LOG_FORMAT: `auto` (the default: pretty when stdout is a terminal, else JSON), `json`, `pretty`. */
function logFormat(value: string | undefined): 'json' | 'pretty' {
  const format = (value || 'auto').toLowerCase();
  if (format === 'auto') return process.stdout.isTTY ? 'pretty' : 'json';
  if (format === 'json' || format === 'pretty') return format;
  throw new ConfigError('LOG_FORMAT', `'${value}' is not one of auto, json, pretty`);
}

function logLevel(value: string | undefined): string {
  const level = value || 'info';
  if (!LOG_LEVELS.includes(level))
    throw new ConfigError('LOG_LEVEL', `'${level}' is not one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

function databaseUrl(value: string | undefined): string {
  const url = value || 'sqlite:data/school.db';
  if (/^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(url)) return url;
  throw new ConfigError(
    'DATABASE_URL',
    `unsupported '${url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')}': use sqlite:<file> ` +
      '(e.g. sqlite:data/school.db) or postgres://user:password@host:5432/database',
  );
}

function sessionUrl(value: string | undefined, dbUrl: string): string | undefined {
  if (!value) return undefined;
  if (!/^postgres(ql)?:\/\/.+/.test(value))
    throw new ConfigError('DATABASE_SESSION_URL', 'is not a postgres:// URL');
  if (!/^postgres(ql)?:\/\//.test(dbUrl))
    throw new ConfigError('DATABASE_SESSION_URL', 'applies only when DATABASE_URL is postgres://');
  return value;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.HOST || '127.0.0.1';
  const port = int(env.PORT, 3000, 'PORT');
  const dbUrl = databaseUrl(env.DATABASE_URL);
  const dataDir = sqliteDir(dbUrl) ?? 'data';
  return Object.freeze({
    host,
    port,
    databaseUrl: dbUrl,
    databaseSchema: env.DATABASE_SCHEMA || undefined,
    databasePoolMax: positive(env.DATABASE_POOL_MAX, 10, 'DATABASE_POOL_MAX', 1000),
    databaseSessionUrl: sessionUrl(env.DATABASE_SESSION_URL, dbUrl),
    publicBaseUrl: (env.PUBLIC_BASE_URL || `http://${host}:${port}`).replace(/\/$/, ''),
    filesDir: env.FILES_DIR || path.join(dataDir, 'files'),
    storageUrl: env.STORAGE_URL || undefined,
    dataDir,
    workers: bool(env.WORKERS, true, 'WORKERS'),
    logLevel: logLevel(env.LOG_LEVEL),
    logFormat: logFormat(env.LOG_FORMAT),
    rateLimit: Object.freeze({
      source: int(env.RATE_LIMIT_SOURCE, 600, 'RATE_LIMIT_SOURCE'),
      account: int(env.RATE_LIMIT_ACCOUNT, 1200, 'RATE_LIMIT_ACCOUNT'),
      credential: int(env.RATE_LIMIT_CREDENTIAL, 600, 'RATE_LIMIT_CREDENTIAL'),
    }),
    webhookAllowPrivateTargets: bool(
      env.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      false,
      'WEBHOOK_ALLOW_PRIVATE_TARGETS',
    ),
    webhookPerEndpoint: positive(
      env.WEBHOOK_PER_ENDPOINT,
      PER_ENDPOINT,
      'WEBHOOK_PER_ENDPOINT',
      64,
    ),
    secretsKey: env.SECRETS_KEY || undefined,
    smtpUrl: env.SMTP_URL || undefined,
    emailFrom: env.EMAIL_FROM || 'School Platform <no-reply@school.invalid>',
    metricsPort: env.METRICS_PORT ? int(env.METRICS_PORT, 0, 'METRICS_PORT') : undefined,
    auditRetentionDays: int(env.AUDIT_RETENTION_DAYS, 90, 'AUDIT_RETENTION_DAYS'),
    trustProxy: int(env.TRUST_PROXY, 0, 'TRUST_PROXY'),
    passwordHashCost: between(env.PASSWORD_HASH_COST, 15, 'PASSWORD_HASH_COST', 10, 20),
  });
}

function sqliteDir(url: string): string | undefined {
  if (!url.startsWith('sqlite:')) return undefined;
  const file = url.slice('sqlite:'.length);
  return file === ':memory:' ? undefined : path.dirname(file);
}
