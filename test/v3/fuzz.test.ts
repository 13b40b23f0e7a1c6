// Schema-driven fuzzing with a fixed seed: every operation of the served contract gets random path
// ids, query parameters, bodies, methods and headers, hostile values included (ids past 2^31-1,
// NUL, undecodable escapes, long strings, `İ`, deep or wide JSON). No answer may be a 5xx other
// than the specification's 503 codes, and every answer must match the contract.
import http from 'node:http';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { ContractChecker } from '../helpers/contract.ts';
import { loadSpec } from '../../src/app.ts';

const SEED = 20261123;
const ROUNDS = Number(process.env.FUZZ_ROUNDS ?? 1500);
/** The specification's 503 codes: each says "not confirmed, retry", never "we broke". */
const ALLOWED_503 = new Set([
  'credential_state_unverifiable',
  'operation_not_catalogued',
  'audit_unavailable',
  'rate_limiter_unavailable',
  'storage_unavailable',
]);

/** mulberry32: small, fast, and the same sequence on every run. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = prng(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
const chance = (p: number) => rand() < p;

const IDS = [
  '2147483647',
  '2147483648',
  '99999999999',
  '999999999999999999',
  '0',
  '-1',
  '1e3',
  '0x10',
  ' 7',
  '%00',
  '%ff',
  '%',
  '%c3%28',
  '٣',
  'abc',
  'x'.repeat(150),
  '9'.repeat(40),
  'req_' + 'f'.repeat(24),
  '%2e%2e',
];
const STRINGS = [
  '',
  ' ',
  'a',
  'ana@example.com',
  'ana@localhost',
  'a\u0000b',
  '\u0000',
  'İ'.repeat(100),
  'İ'.repeat(101),
  'x'.repeat(201),
  'x'.repeat(5000),
  '\ud800',
  '😀'.repeat(60),
  '2030-12-31T23:59:60Z',
  '2026-02-30T00:00:00Z',
  '9999-12-31T23:59:59Z',
  '*',
  'users.read',
  '<script>',
  "' OR 1=1 --",
  '../../etc/passwd',
];
const NUMBERS = [0, -1, 1, 1.5, 2147483648, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2];

function randomValue(depth = 0): unknown {
  const r = rand();
  if (r < 0.35) return pick(STRINGS);
  if (r < 0.5) return pick(NUMBERS);
  if (r < 0.6) return pick([true, false, null]);
  if (depth > 3) return null;
  if (r < 0.8) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(rand() * 4); i > 0; i--)
    o[pick(STRINGS).slice(0, 20)] = randomValue(depth + 1);
  return o;
}

/** A body shaped after the operation's schema: known names with random values, sometimes extras. */
function randomBody(schema: any, spec: any): unknown {
  const s = resolve(schema, spec);
  if (chance(0.1)) return randomValue();
  const props = Object.keys(s?.properties ?? {});
  const body: Record<string, unknown> = {};
  for (const name of props) {
    if (!chance(0.7)) continue;
    const p = resolve(s.properties[name], spec);
    body[name] = chance(0.5) ? plausible(p, spec) : randomValue(1);
  }
  if (chance(0.15)) body[pick(STRINGS)] = randomValue(1);
  return body;
}

function plausible(schema: any, spec: any): unknown {
  const s = resolve(schema, spec);
  if (s?.enum) return pick(s.enum);
  const type = Array.isArray(s?.type) ? s.type[0] : s?.type;
  if (type === 'string')
    return s.format === 'email' ? `f${Math.floor(rand() * 1e9)}@example.com` : pick(STRINGS);
  if (type === 'integer' || type === 'number') return pick(NUMBERS);
  if (type === 'boolean') return chance(0.5);
  if (type === 'array') return [plausible(s.items ?? {}, spec)];
  if (type === 'object') return randomBody(s, spec);
  return randomValue(2);
}

function resolve(node: any, spec: any): any {
  let current = node;
  while (current?.$ref) {
    current = current.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((acc: any, p: string) => acc?.[p.replace(/~1/g, '/').replace(/~0/g, '~')], spec);
  }
  return current;
}

interface Op {
  method: string;
  path: string;
  query: string[];
  body: any;
}

function operations(spec: any): Op[] {
  const ops: Op[] = [];
  for (const [path, item] of Object.entries<any>(spec.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) =>
        resolve(p, spec),
      );
      ops.push({
        method: method.toUpperCase(),
        path,
        query: params.filter((p) => p.in === 'query').map((p) => p.name),
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
      });
    }
  }
  return ops;
}

/** What an HTTP client can put in a header: visible ASCII and spaces. */
const header = (s: string) => s.replace(/[^\x20-\x7e]/g, '?').slice(0, 200);

const ODD_METHODS = ['HEAD', 'OPTIONS', 'UNSUBSCRIBE', 'PROPFIND', 'MKCALENDAR', 'PURGE', 'SEARCH'];

function send(
  url: string,
  method: string,
  path: string,
  headers: [string, string][],
  body?: string,
): Promise<{ status: number; type: string | null; text: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({
      host: u.hostname,
      port: u.port,
      method,
      path,
      headers: [['Host', u.host], ...headers].flat(),
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          type: (res.headers['content-type'] as string | undefined) ?? null,
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

const t = suite<{ b: Booted; spec: any; checker: ContractChecker }>('v3 fuzz');
t.before(async (ctx) => {
  ctx.b = await boot();
  ctx.spec = loadSpec();
  ctx.checker = new ContractChecker(ctx.spec);
  // Some real records, so ids sometimes name something.
  for (let i = 0; i < 3; i++) {
    const u = await ctx.b.api('POST', '/api/v3/users', {
      body: { name: `Fuzz ${i}`, email: `fuzz${i}@example.com` },
      key: newKey(),
    });
    const tag = await ctx.b.api('POST', '/api/v3/tags', {
      body: { name: `fuzz${i}` },
      key: newKey(),
    });
    IDS.push(u.body.data.id, tag.body.data.id);
  }
});
t.after(async (ctx) => ctx.b.close());

t(
  `${ROUNDS} seeded requests: no 5xx but the specification's 503s, all in the contract`,
  async ({ b, spec, checker }) => {
    const ops = operations(spec);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (let i = 0; i < ROUNDS; i++) {
      const op = pick(ops);
      const method = chance(0.08) ? pick(ODD_METHODS) : op.method;
      // Path ids are written raw: the hostile ones are already escaped or meant to be undecodable.
      const path =
        '/api/v3' +
        op.path.replace(/\{[^}]+\}/g, () => {
          const id = pick(IDS);
          return id.includes('%') ? id : encodeURIComponent(id);
        });
      const query = new URLSearchParams();
      for (const name of op.query)
        if (chance(0.3)) query.set(name, String(plausible({ type: 'string' }, spec)));
      if (chance(0.1))
        query.set(pick(['limit', 'cursor', 'sort', 'zzz']), pick([...STRINGS, '0', '201', '-5']));
      const target = path + (query.size ? `?${query}` : '');
      const headers: [string, string][] = [];
      if (!chance(0.05))
        headers.push([
          'Authorization',
          chance(0.05) ? header(`Bearer ${pick(STRINGS)}`) : `Bearer ${b.secret}`,
        ]);
      if (method === 'POST' || chance(0.2))
        headers.push(['Idempotency-Key', chance(0.9) ? newKey() : header(pick(STRINGS))]);
      if (chance(0.15))
        headers.push(['If-Match', pick(['', '*', '"x"', 'W/"y"', 'abc', '"a", "b"'])]);
      if (chance(0.1))
        headers.push([
          'Accept',
          pick(['text/html', 'application/*', 'application/json;q=0', '*/*;q=0.1']),
        ]);
      if (chance(0.1))
        headers.push(['Accept-Language', pick(['pt-BR', 'fr', 'xx-YY', '*;q=0', ''])]);
      let body: string | undefined;
      if (op.body || chance(0.1)) {
        const value = op.body ? randomBody(op.body, spec) : randomValue();
        body = chance(0.05) ? '{"a":' : JSON.stringify(value);
        headers.push([
          'Content-Type',
          chance(0.92)
            ? 'application/json'
            : pick(['text/plain', 'application/json; charset=latin1', '']),
        ]);
        headers.push(['Content-Length', String(Buffer.byteLength(body))]);
      }
      const res = await send(b.url, method, target, headers, body);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const where = `#${i} ${method} ${target.slice(0, 120)} -> ${res.status}`;
      let parsed: any;
      try {
        parsed =
          res.text && res.type?.startsWith('application/json') ? JSON.parse(res.text) : undefined;
      } catch {
        failures.push(`${where}: body is not JSON`);
        continue;
      }
      if (res.status >= 500 && !(res.status === 503 && ALLOWED_503.has(parsed?.error?.code)))
        failures.push(`${where}: ${res.text.slice(0, 200)}`);
      if (method === 'HEAD') continue; // no body to check
      try {
        checker.check(method, target, res.status, res.type, parsed);
      } catch (err) {
        failures.push((err as Error).message.slice(0, 300));
      }
    }
    if (process.env.FUZZ_VERBOSE) console.log([...statuses].sort(), failures.length);
    assert.equal(failures.slice(0, 10), [], `${failures.length} failures`);
    // The run reached deep into the pipeline, not only its first checks.
    assert.ok(
      (statuses.get(200) ?? 0) + (statuses.get(201) ?? 0) > ROUNDS / 20,
      JSON.stringify([...statuses]),
    );
    assert.ok((statuses.get(404) ?? 0) > 0 && (statuses.get(422) ?? 0) > 0);
  },
);

t.run();
