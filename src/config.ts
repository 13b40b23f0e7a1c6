// The only reader of process.env. Everything else receives a frozen Config.
import path from 'node:path';

export interface Config {
  host: string;
  port: number;
  databaseUrl: string;
  /** PostgreSQL: the schema to use instead of the role's search_path (one database, several schools or test suites). */
  databaseSchema: string | undefined;
  publicBaseUrl: string;
  filesDir: string;
  /** s3://bucket?endpoint=...&region=...: files in S3-compatible storage; unset: FILES_DIR. */
  storageUrl: string | undefined;
  dataDir: string;
  workers: boolean;
  logLevel: string;
  rateLimit: { source: number; account: number; credential: number };
  webhookAllowPrivateTargets: boolean;
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
}

function int(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer`);
  return n;
}

function bool(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  return ['1', 'true', 'yes', 'on'].includes(value.toLowerCase());
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.HOST || '127.0.0.1';
  const port = int(env.PORT, 3000, 'PORT');
  const databaseUrl = env.DATABASE_URL || 'sqlite:data/school.db';
  const dataDir = sqliteDir(databaseUrl) ?? 'data';
  return Object.freeze({
    host,
    port,
    databaseUrl,
    databaseSchema: env.DATABASE_SCHEMA || undefined,
    publicBaseUrl: (env.PUBLIC_BASE_URL || `http://${host}:${port}`).replace(/\/$/, ''),
    filesDir: env.FILES_DIR || path.join(dataDir, 'files'),
    storageUrl: env.STORAGE_URL || undefined,
    dataDir,
    workers: bool(env.WORKERS, true),
    logLevel: env.LOG_LEVEL || 'info',
    rateLimit: Object.freeze({
      source: int(env.RATE_LIMIT_SOURCE, 600, 'RATE_LIMIT_SOURCE'),
      account: int(env.RATE_LIMIT_ACCOUNT, 1200, 'RATE_LIMIT_ACCOUNT'),
      credential: int(env.RATE_LIMIT_CREDENTIAL, 600, 'RATE_LIMIT_CREDENTIAL'),
    }),
    webhookAllowPrivateTargets: bool(env.WEBHOOK_ALLOW_PRIVATE_TARGETS, false),
    secretsKey: env.SECRETS_KEY || undefined,
    smtpUrl: env.SMTP_URL || undefined,
    emailFrom: env.EMAIL_FROM || 'School Platform <no-reply@school.invalid>',
    metricsPort: env.METRICS_PORT ? int(env.METRICS_PORT, 0, 'METRICS_PORT') : undefined,
    auditRetentionDays: int(env.AUDIT_RETENTION_DAYS, 90, 'AUDIT_RETENTION_DAYS'),
    trustProxy: int(env.TRUST_PROXY, 0, 'TRUST_PROXY'),
  });
}

function sqliteDir(url: string): string | undefined {
  if (!url.startsWith('sqlite:')) return undefined;
  const file = url.slice('sqlite:'.length);
  return file === ':memory:' ? undefined : path.dirname(file);
}
