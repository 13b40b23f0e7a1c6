// The services of a bench process built as src/worker.ts builds them, on a fresh database: a
// SQLite file in a temporary folder, or a postgres:// URL in a `bench_<random>` schema made here
// (or a given one, made and dropped by the caller). `close()` takes everything down again.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../src/clock.ts';
import { loadConfig } from '../src/config.ts';
import type { Db } from '../src/db/engine.ts';
import { createDb } from '../src/db/knex.ts';
import { migrate } from '../src/db/migrate.ts';
import { closeSideConnections } from '../src/db/reader.ts';
import { createLogger } from '../src/log.ts';
import { createServices, type Services } from '../src/services.ts';
import { createBenchSchema, type BenchSchema } from './pg-schema.ts';

export interface BenchServices {
  services: Services;
  db: Db;
  postgres: boolean;
  close(): Promise<void>;
}

export async function benchServices(
  database: string,
  name: string,
  options: { env?: Record<string, string>; schema?: string } = {},
): Promise<BenchServices> {
  const postgres = database.startsWith('postgres://') || database.startsWith('postgresql://');
  if (!postgres && database !== 'sqlite')
    throw new Error('database must be `sqlite` or a postgres:// URL');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `school-bench-${name}-`));
  const own: BenchSchema | null =
    postgres && !options.schema ? await createBenchSchema(database) : null;
  const config = loadConfig({
    DATABASE_URL: postgres ? database : `sqlite:${path.join(dir, `${name}.db`)}`,
    DATABASE_SCHEMA: options.schema ?? own?.schema,
    FILES_DIR: path.join(dir, 'files'),
    SECRETS_KEY: crypto.randomBytes(32).toString('base64url'),
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  const db = createDb(config.databaseUrl, { schema: config.databaseSchema });
  const close = async () => {
    await db.destroy();
    await closeSideConnections(db);
    await own?.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await migrate(db);
    const services = await createServices({
      config,
      db,
      clock: systemClock,
      logger: createLogger('silent'),
    });
    return { services, db, postgres, close };
  } catch (err) {
    await close();
    throw err;
  }
}
