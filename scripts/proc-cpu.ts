// A process's CPU time from Linux /proc (the test runner's per-file CPU, the bench's server and
// database figures): wall times mislead on a shared machine.
import fs from 'node:fs';

/**
 * CPU ms (user + system) a process has used, with `children` those of its children that have
 * exited and been waited for (servers, CLIs, bash and npm that a test file started). Null when
 * the process is gone or there is no /proc; clock ticks are 100 a second there.
 */
export function pidCpuMs(pid: number | undefined, { children = false } = {}): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(f[11]) + Number(f[12]) + (children ? Number(f[13]) + Number(f[14]) : 0);
    return ticks * 10;
  } catch {
    return null;
  }
}
