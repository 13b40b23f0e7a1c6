// Usage: npm run mock -- [--spec FILE] [--port N] [--host HOST] [--proxy URL]
// Serves every v3 operation of the contract (default spec/openapi.yaml) from its examples, with
// the real server's request checks and error envelope, and no database. Prints one JSON line
// when it listens: {"mock":true,"url":...,"release":...,"operations":N}. SIGTERM stops it.
// With --proxy URL it mocks nothing: every request goes to the server at URL, and each answer
// that breaks the contract gets an X-Contract-Violations header and a JSON line on stdout
// ({"contract_violation":{...}}); the start line then also says {"proxy":URL}.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT, contractPaths, loadContract } from '../src/contract/files.ts';
import { MOCK_BASE, createMock } from '../src/mock/server.ts';
import { createProxy } from '../src/mock/proxy.ts';
import { startOrExit } from '../src/startup.ts';

const USAGE =
  'usage: npm run mock -- [--spec FILE] [--port N] [--host HOST] [--proxy URL]  (port 4010)';
const CALLER_DIR = process.env.INIT_CWD ?? process.cwd();

function fail(message: string): never {
  console.error(`mock: ${message}\n${USAGE}`);
  process.exit(2);
}

let values;
try {
  ({ values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      spec: { type: 'string' },
      port: { type: 'string', default: '4010' },
      host: { type: 'string', default: '127.0.0.1' },
      proxy: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  }));
} catch (err) {
  fail((err as Error).message);
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port ${values.port}`);
const file = values.spec ? path.resolve(CALLER_DIR, values.spec) : contractPaths(REPO_ROOT).spec;

let spec;
try {
  spec = loadContract(file);
} catch (err) {
  fail((err as Error).message);
}
if (values.proxy !== undefined && !/^https?:\/\/[^/]+/.test(values.proxy))
  fail(`--proxy ${values.proxy}: an http:// or https:// URL`);
const mock = values.proxy
  ? createProxy(spec, values.proxy, { apiRoot: MOCK_BASE })
  : await createMock(spec);
const bound = await startOrExit(
  'mock',
  () => ({ host: values.host, port }),
  () => mock.listen(port, values.host),
);
const host = values.host.includes(':') ? `[${values.host}]` : values.host;
console.log(
  JSON.stringify({
    mock: true,
    ...(values.proxy ? { proxy: values.proxy } : {}),
    url: `http://${host}:${bound}${MOCK_BASE}`,
    release: mock.release,
    operations: mock.operations,
    spec: path.relative(REPO_ROOT, file) || file,
  }),
);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => void mock.close().then(() => process.exit(0)));
}
