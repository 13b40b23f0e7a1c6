// `npm run worker` processes for the tests that kill and restart workers: one per call, on the
// booted app's database, with the app's SECRETS_KEY (every process of a database must share it).
// `preload` slows items down (a test helper imported first); DEBUG_WORKERS=1 shows their output.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { npmScriptArgs } from './npm-scripts.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

export function workerProcess(
  database: { url: string; schema?: string },
  options: { secretsKey: string; env?: Record<string, string>; preload?: string },
): ChildProcess {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: database.url,
    LOG_LEVEL: process.env.DEBUG_WORKERS ? 'info' : 'silent',
    SECRETS_KEY: options.secretsKey,
    ...options.env,
  };
  if (database.schema) env.DATABASE_SCHEMA = database.schema;
  const preload = options.preload ? ['--import', options.preload] : [];
  const [flags, entry] = [npmScriptArgs('worker').slice(0, -1), npmScriptArgs('worker').at(-1)!];
  return spawn(process.execPath, [...flags, ...preload, entry], {
    cwd: ROOT,
    env,
    stdio: process.env.DEBUG_WORKERS ? 'inherit' : 'ignore',
  });
}

/** The exit code of a worker process (null: it was killed by a signal). */
export const exited = (p: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) resolve(p.exitCode);
    else p.once('exit', (code) => resolve(code));
  });
