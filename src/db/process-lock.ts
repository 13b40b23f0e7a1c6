// SQLite is one server per database file: a second `npm start` on the same file would serve
// beside the first (two caches, two schedulers of the same jobs) without anyone having chosen it.
// The serving process holds `<file>.server.lock` (its pid) for as long as it runs; a second one is
// refused with a message saying what to do. A separate `npm run worker` beside the server is
// supported (spec/DECISIONS.md) and holds `<file>.worker.lock`, so there is at most one of each.
// A lock whose process is gone (kill -9, a crash) is taken over. The admin CLI takes no lock: it is
// short-lived and writes through transactions like any other writer.
import fs from 'node:fs';
import path from 'node:path';
import { StartupError } from '../startup.ts';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock for `role` on a SQLite database URL; returns its release (no-op for PostgreSQL). */
export function holdSqliteLock(databaseUrl: string, role: 'server' | 'worker'): () => void {
  if (!databaseUrl.startsWith('sqlite:')) return () => undefined;
  const file = databaseUrl.slice('sqlite:'.length);
  if (file === ':memory:') return () => undefined;
  const lock = `${file}.${role}.lock`;
  for (let tries = 0; ; tries++) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && tries === 0) {
        // The database folder does not exist yet (first start): make it, as opening the file would.
        fs.mkdirSync(path.dirname(file), { recursive: true });
        continue;
      }
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || tries > 2) throw err;
      const holder = Number(fs.readFileSync(lock, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
        const what = role === 'server' ? 'npm start' : 'npm run worker';
        throw new StartupError(
          `another ${what} (pid ${holder}) already uses ${file}: SQLite is one ${role} per ` +
            'database file. Stop it, give this one its own DATABASE_URL, or use PostgreSQL for ' +
            'several instances.',
        );
      }
      fs.rmSync(lock, { force: true }); // its process is gone
    }
  }
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    try {
      if (fs.readFileSync(lock, 'utf8').trim() === String(process.pid)) fs.rmSync(lock);
    } catch {
      // already gone
    }
  };
  process.once('exit', release);
  return release;
}
