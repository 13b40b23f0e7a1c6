// `.env` files with `node --env-file` semantics: KEY=value lines read by Node's own parser
// (process.loadEnvFile), and a variable already set in the environment wins over the file. The
// file is `.env` in the working folder when it exists, or the one ENV_FILE names (which must).
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from './startup.ts';

/** Loads the file into process.env; returns its path, or undefined when there is none. */
export function loadEnvFile(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()) {
  const named = env.ENV_FILE;
  const file = named ? path.resolve(cwd, named) : path.join(cwd, '.env');
  if (!named && !fs.existsSync(file)) return undefined;
  try {
    process.loadEnvFile(file);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(err);
    throw new ConfigError(named ? 'ENV_FILE' : '.env', `cannot read ${file}: ${reason}`);
  }
  return file;
}
