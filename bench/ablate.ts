// Where the pipeline's time goes, by subtraction: runs scripts/bench.ts repeatedly with pieces of
// the pipeline swapped for no-ops or prototypes (BENCH_ABLATE, see bench/ablations.ts), configurations
// interleaved over several rounds so a noisy neighbour hits all of them alike. Reports the server's
// CPU µs per request (robust to load-generator effects) and req/s, best and median of the rounds.
//   node bench/ablate.ts [rounds=3] [seconds=4]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const rounds = Number(process.argv[2] ?? 3);
const seconds = Number(process.argv[3] ?? 4);
const root = path.resolve(import.meta.dirname, '..');
const configs: { name: string; only: string; ablate: string }[] = [
  { name: 'reference', only: 'reference', ablate: '' },
  { name: 'app (real pipeline)', only: 'get,post', ablate: '' },
  { name: 'no-op: audit insert', only: 'get,post', ablate: 'audit' },
  { name: 'no-op: rate limiters', only: 'get,post', ablate: 'ratelimit' },
  { name: 'no-op: credential lookup', only: 'get,post', ablate: 'authcache' },
  { name: 'proto: prepared statements', only: 'get,post', ablate: 'prepared' },
  { name: 'proto: prepared + group audit', only: 'get,post', ablate: 'prepared,groupaudit' },
  {
    name: 'proto: prepared+group audit+auth cache',
    only: 'get,post',
    ablate: 'prepared,groupaudit,authcache',
  },
];

interface Phase {
  rps: number;
  latency: { p99: number };
  non2xx: number;
  cpu: { serverUsPerReq: number | null; otherPct: number | null };
}
const samples = new Map<string, { us: number; rps: number; p99: number; other: number }[]>();
const tmp = path.join(os.tmpdir(), `bench-ablate-${process.pid}.json`);

for (let r = 0; r < rounds; r++) {
  for (const c of configs) {
    process.stderr.write(`round ${r + 1}/${rounds}: ${c.name}\n`);
    const run = spawnSync(process.execPath, ['scripts/bench.ts'], {
      cwd: root,
      env: {
        ...process.env,
        BENCH_ONLY: c.only,
        BENCH_ABLATE: c.ablate,
        BENCH_SECONDS: String(seconds),
        BENCH_WARMUP: '2',
        BENCH_JSON: tmp,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (run.status !== 0) throw new Error(`bench failed for ${c.name}`);
    const out = JSON.parse(fs.readFileSync(tmp, 'utf8')) as { phases: Record<string, Phase> };
    for (const [key, p] of Object.entries(out.phases)) {
      if (p.non2xx) throw new Error(`${c.name} ${key}: ${p.non2xx} non-2xx responses`);
      const k = `${c.name}|${key}`;
      if (!samples.has(k)) samples.set(k, []);
      samples.get(k)!.push({
        us: p.cpu.serverUsPerReq ?? NaN,
        rps: p.rps,
        p99: p.latency.p99,
        other: p.cpu.otherPct ?? NaN,
      });
    }
  }
}
fs.rmSync(tmp, { force: true });

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pad = (s: string, n: number) => s.padStart(n);
console.log(
  `\n${rounds} rounds x ${seconds} s, the bench's connections (GET 50, POST 10 unless ` +
    `BENCH_CONNECTIONS / BENCH_POST_CONNECTIONS say otherwise). CPU µs/req = server CPU time / requests.`,
);
console.log(
  'config                                   phase       CPU µs/req best  median   req/s best  median  p99 ms med  other CPU med',
);
for (const [k, xs] of samples) {
  const [name, phase] = k.split('|') as [string, string];
  const us = xs.map((x) => x.us);
  const rps = xs.map((x) => x.rps);
  console.log(
    `${name.padEnd(40)} ${phase.padEnd(14)} ${pad(Math.min(...us).toFixed(0), 12)} ${pad(med(us).toFixed(0), 7)}` +
      ` ${pad(Math.max(...rps).toFixed(0), 12)} ${pad(med(rps).toFixed(0), 7)}` +
      ` ${pad(med(xs.map((x) => x.p99)).toFixed(0), 11)} ${pad(med(xs.map((x) => x.other)).toFixed(0) + '%', 14)}`,
  );
}
