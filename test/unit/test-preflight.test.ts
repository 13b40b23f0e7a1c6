// The test runner's check of TEST_DATABASE_URL: one line that says what to do.
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { postgresProblem } from '../../scripts/test-preflight.ts';

const t = suite('test runner: TEST_DATABASE_URL preflight');

t('nothing listening: says so and how to start PostgreSQL, password hidden', async () => {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((r) => server.close(r));
  const problem = await postgresProblem(`postgres://school:secret@127.0.0.1:${port}/x`);
  assert.is(
    problem,
    `TEST_DATABASE_URL: nothing answers at postgres://school:***@127.0.0.1:${port}/x (ECONNREFUSED); start PostgreSQL (e.g. pg_ctlcluster 15 main start) or fix the host and port.`,
  );
});

t('not a URL', async () => {
  assert.match((await postgresProblem('school_test'))!, /^TEST_DATABASE_URL is not a URL/);
});

const url = process.env.TEST_DATABASE_URL;
if (url) {
  t('the configured database: usable; a wrong password or database says what to run', async () => {
    assert.is(await postgresProblem(url), null);
    const wrong = new URL(url);
    wrong.password = 'not-the-password';
    assert.match((await postgresProblem(wrong.toString()))!, /create the role and its database/);
    const missing = new URL(url);
    missing.pathname = '/no_such_database_here';
    assert.match((await postgresProblem(missing.toString()))!, /does not exist; create it/);
  });
}

t.run();
