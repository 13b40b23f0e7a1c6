// The server and the worker as child processes, as operators run them (the `node ...` line that
// `npm start` / `npm run worker` run, from package.json; spawning node itself means SIGTERM reaches it). Every
// stdout line is kept, parsed when it is JSON (pino lines, the demo bootstrap line).
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { npmScriptArgs } from '../helpers/npm-scripts.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface Proc {
  proc: ChildProcess;
  lines: { raw: string; json: any }[];
  readonly stderr: string;
  exited: Promise<number | null>;
  /** Resolves with the first JSON line that passes `test` (already printed or still to come). */
  waitFor(test: (json: any) => boolean, ms?: number): Promise<any>;
  stop(): Promise<number | null>;
}

export function startProcess(entry: 'src/main.ts' | 'src/worker.ts', env: NodeJS.ProcessEnv): Proc {
  const script = entry === 'src/main.ts' ? 'start' : 'worker';
  const proc = spawn(process.execPath, npmScriptArgs(script), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Proc['lines'] = [];
  const waiters = new Set<() => void>();
  readline.createInterface({ input: proc.stdout! }).on('line', (raw) => {
    let json: any;
    try {
      json = JSON.parse(raw);
    } catch {
      json = undefined;
    }
    lines.push({ raw, json });
    for (const w of waiters) w();
  });
  let stderr = '';
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return {
    proc,
    lines,
    get stderr() {
      return stderr;
    },
    exited,
    waitFor(test, ms = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = lines.find((l) => l.json && test(l.json));
          if (!hit) return;
          cleanup();
          resolve(hit.json);
        };
        const timer = setTimeout(() => {
          cleanup();
          const out = lines.map((l) => l.raw).join('\n');
          reject(new Error(`${entry}: timed out; stdout:\n${out}\nstderr:\n${stderr}`));
        }, ms);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        exited.then(() =>
          setTimeout(() => {
            check();
            if (waiters.has(check)) {
              cleanup();
              reject(
                new Error(
                  `${entry} exited; stdout:\n${lines.map((l) => l.raw).join('\n')}\nstderr:\n${stderr}`,
                ),
              );
            }
          }, 50),
        );
        check();
      });
    },
    stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
}
