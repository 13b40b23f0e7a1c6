// The bench's server children (scripts/bench-server.ts, scripts/bench-reference.ts) take commands
// from their parent on stdin, one per line:
//   reset  start a measurement window (event-loop delay and GC counters cleared)
//   stats  print `BENCH_STATS {...}` on stdout: event-loop delay and GC pauses since `reset`
// and stop when stdin closes (the parent ended or died) or on SIGTERM/SIGINT.
import readline from 'node:readline';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

export interface ChildStats {
  /** Event-loop delay in ms: how late a 5 ms timer fires, i.e. the longest synchronous stretches. */
  loopDelay: { p50: number; p99: number; max: number };
  gc: { count: number; totalMs: number; maxMs: number };
}

export function serveControl(stop: () => void): void {
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  let gc = { count: 0, totalMs: 0, maxMs: 0 };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.count++;
      gc.totalMs += e.duration;
      gc.maxMs = Math.max(gc.maxMs, e.duration);
    }
  }).observe({ entryTypes: ['gc'] });

  const lines = readline.createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const cmd = line.trim();
    if (cmd === 'reset') {
      loop.reset();
      gc = { count: 0, totalMs: 0, maxMs: 0 };
    } else if (cmd === 'stats') {
      const ms = (ns: number) => Math.round(ns / 1e4) / 100;
      const stats: ChildStats = {
        loopDelay: {
          p50: ms(loop.percentile(50)),
          p99: ms(loop.percentile(99)),
          max: ms(loop.max),
        },
        gc: { ...gc, totalMs: Math.round(gc.totalMs), maxMs: Math.round(gc.maxMs * 10) / 10 },
      };
      process.stdout.write(`BENCH_STATS ${JSON.stringify(stats)}\n`);
    }
  });
  lines.on('close', stop);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, stop);
}
