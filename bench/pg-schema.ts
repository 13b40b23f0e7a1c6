// A throw-away PostgreSQL schema for one bench child (scripts/bench.ts's batch phase,
// bench/job-latency.ts): `bench_<random>` is created empty, the child migrates into it, and drop()
// removes it and the job queue's own `<schema>_jobs` (graphile-worker, src/jobs/pg.ts) with CASCADE.
import crypto from 'node:crypto';
import pg from 'pg';

export interface BenchSchema {
  schema: string;
  drop(): Promise<void>;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

async function run(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function createBenchSchema(url: string): Promise<BenchSchema> {
  const schema = `bench_${crypto.randomBytes(6).toString('hex')}`;
  await run(url, `CREATE SCHEMA ${quote(schema)}`);
  return {
    schema,
    drop: () =>
      run(
        url,
        `DROP SCHEMA IF EXISTS ${quote(schema)} CASCADE; ` +
          `DROP SCHEMA IF EXISTS ${quote(`${schema}_jobs`)} CASCADE`,
      ),
  };
}

/** The PostgreSQL URL the bench uses: BENCH_DATABASE_URL, else TEST_DATABASE_URL; `off` for none. */
export function benchPostgresUrl(env: NodeJS.ProcessEnv = process.env): string | null {
  const isPg = (u: string) => u.startsWith('postgres://') || u.startsWith('postgresql://');
  const own = env.BENCH_DATABASE_URL;
  if (own === 'off') return null;
  if (own) {
    if (!isPg(own)) throw new Error('BENCH_DATABASE_URL must be a postgres:// URL (or `off`)');
    return own;
  }
  const test = env.TEST_DATABASE_URL;
  return test && isPg(test) ? test : null;
}
