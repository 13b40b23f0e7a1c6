// Summarises a V8 .cpuprofile (from `BENCH_CPU_PROF=dir npm run bench`, i.e. node --cpu-prof):
// self time by category (package / src directory / node internals / GC / idle), self time by
// function, and inclusive (synchronous-stack) time of the project's own functions, plus the self
// time grouped into the layers of a request (database, HTTP/Koa, project code, ...).
//   node bench/profile-summary.ts FILE.cpuprofile [topN=25] [skipSeconds=0]
// skipSeconds drops the start of the profile (boot, migrations, Ajv compilation, warm-up).
import fs from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const file = process.argv[2];
const top = Number(process.argv[3] ?? 25);
const skipUs = Number(process.argv[4] ?? 0) * 1e6;
// One file: a glob that matched several (node --cpu-prof writes one per worker thread) once put a
// file name where topN goes, and every table came out empty.
if (!file || !Number.isFinite(top) || !Number.isFinite(skipUs)) {
  console.error('usage: node bench/profile-summary.ts FILE.cpuprofile [topN=25] [skipSeconds=0]');
  process.exit(2);
}
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;

const byId = new Map<number, ProfileNode>();
const parent = new Map<number, number>();
for (const n of profile.nodes) byId.set(n.id, n);
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

function category(f: CallFrame): string {
  if (!f.url) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  if (f.url.startsWith('node:')) return 'node:' + f.url.slice(5).split('/')[0];
  const nm = f.url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = f.url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const src = f.url.indexOf('/src/');
  if (src >= 0) return 'src/' + f.url.slice(src + 5);
  const scripts = f.url.indexOf('/scripts/');
  if (scripts >= 0) return 'scripts/' + f.url.slice(scripts + 9);
  return f.url;
}

function key(f: CallFrame): string {
  const where = f.url ? `${category(f)}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'} ${where}`.trim();
}

const selfByFn = new Map<string, number>();
const selfByCat = new Map<string, number>();
const inclusiveSrc = new Map<string, number>();
let total = 0;
let idle = 0;
let elapsed = 0;
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);

function layer(f: CallFrame): string {
  const c = category(f);
  if (/^(knex|better-sqlite3|tarn|lodash|debug|colorette|pg-connection-string)$/.test(c))
    return 'database: knex + better-sqlite3 (incl. SQLite itself)';
  if (
    /^(koa|delegates|on-finished|ee-first|accepts|negotiator|mime-types|mime-db|type-is|statuses|content-type|fresh|vary|encodeurl|escape-html|koa-compose|http-errors|cookies|keygrip|only|destroy|media-typer|depd|content-disposition)$/.test(
      c,
    )
  )
    return 'Koa and its helpers';
  if (
    /^node:(_http|net|stream|internal\/streams|events|buffer|timers)/.test(c) ||
    /^(writev|writeBuffer|writeUtf8String|writeLatin1String|shutdown|close)$/.test(f.functionName)
  )
    return 'Node HTTP / net / streams / events';
  if (c.startsWith('src/') || c.startsWith('scripts/')) return 'project code (src/)';
  if (c === 'ajv' || c === 'ajv-formats' || c === 'fast-uri') return 'ajv';
  if (c === 'rate-limiter-flexible') return 'rate-limiter-flexible';
  if (c === 'find-my-way') return 'find-my-way';
  if (c === 'pino' || c === 'sonic-boom') return 'pino';
  if (/randomFillSync|Hash|digest|update|randomBytes/.test(f.functionName)) return 'crypto';
  if (c === '(garbage collector)') return 'garbage collector';
  if (c === '(idle)') return 'idle';
  if (c === 'tsx' || /compile|wrapSafe|Module|load/i.test(f.functionName))
    return 'module loading (tsx)';
  return 'other (' + c + ')';
}
const byLayer = new Map<string, number>();

for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i] ?? 0;
  elapsed += dt;
  if (elapsed < skipUs) continue;
  const leaf = byId.get(profile.samples[i]!)!;
  add(byLayer, layer(leaf.callFrame), dt);
  total += dt;
  if (leaf.callFrame.functionName === '(idle)') idle += dt;
  add(selfByFn, key(leaf.callFrame), dt);
  add(selfByCat, category(leaf.callFrame), dt);
  const seen = new Set<string>();
  for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
    const f = byId.get(id)!.callFrame;
    if (!f.url.includes('/src/') && !f.url.includes('/scripts/')) continue;
    const k = key(f);
    if (seen.has(k)) continue;
    seen.add(k);
    add(inclusiveSrc, k, dt);
  }
}

const busy = total - idle;
const ms = (us: number) => (us / 1000).toFixed(0).padStart(7);
const pct = (us: number) => ((100 * us) / busy).toFixed(1).padStart(5) + '%';
function print(title: string, m: Map<string, number>, n: number): void {
  console.log(`\n${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n))
    console.log(`${ms(v)} ms ${pct(v)}  ${k}`);
}

console.log(
  `${file}: first ${skipUs / 1e6} s skipped, ${(total / 1e6).toFixed(1)} s sampled, ${(idle / 1e6).toFixed(1)} s idle, ` +
    `${(busy / 1e6).toFixed(1)} s busy (percentages are of busy time)`,
);
byLayer.delete('idle');
print('Self time by layer', byLayer, top);
print('Self time by category', selfByCat, top);
print('Self time by function', selfByFn, top);
print('Inclusive time, project functions (synchronous stacks only)', inclusiveSrc, top);
