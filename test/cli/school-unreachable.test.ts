// engine: any
// The school CLI's "server down" reads one way, whichever command met it: the URL it tried and
// how to change it (not "fetch failed", a bare ECONNREFUSED, or "cannot reach ... : <library text>").
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../../src/cli/school/main.ts';

/** A loopback port nobody listens on (taken, then given back). */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

test('every command says the same thing when the server is not there', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-down-'));
  const url = `http://127.0.0.1:${await closedPort()}`;
  const expected = `error: cannot reach the server at ${url} (ECONNREFUSED): is it running? Set --base-url or SCHOOL_BASE_URL to its address`;
  // (whoami without a stored login stops before the network: "not logged in".)
  const commands = [
    ['login', '--no-browser'],
    ['operations', 'watch', '1', '--api-key', 'sch_test_x'],
    ['events', 'listen', '--api-key', 'sch_test_x'],
  ];
  try {
    for (const argv of commands) {
      const err: string[] = [];
      const code = await main([...argv, '--base-url', url], {
        out: () => undefined,
        err: (l) => err.push(l),
        env: { SCHOOL_CONFIG_DIR: dir, SCHOOL_OPEN_BROWSER: '0' },
      });
      assert.is(code, 1, `${argv.join(' ')}: ${err.join('\n')}`);
      assert.equal(err, [expected], argv.join(' '));
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
