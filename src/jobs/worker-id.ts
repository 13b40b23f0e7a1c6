// Worker identity. A worker id names its host and process, so a worker that starts on the same
// host can tell that the owner of a lock or lease died (kill -9) and take the work over at once,
// instead of waiting for a lease to run out.
import crypto from 'node:crypto';
import os from 'node:os';

export function newWorkerId(): string {
  return `${os.hostname()}/${process.pid}/${crypto.randomBytes(4).toString('hex')}`;
}

/** True when the id names a process of this host that no longer exists. */
export function isDeadWorker(id: string | null | undefined): boolean {
  if (!id) return false;
  const [host, pid] = id.split('/');
  if (host !== os.hostname() || !pid || !/^\d+$/.test(pid)) return false;
  if (Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
