// An enrollments.grant batch of N items (one student each, one product) on a fresh database with
// the workers in this process, from the operation's creation to succeeded: a first batch that
// creates every enrollment (and its welcome email and job), then BATCHES more that renew them.
// Prints one JSON line on stdout: {"engine","items","create":{"seconds","itemsPerSecond"},
// "renew":{"seconds","itemsPerSecond"}} (renew: the median of the renewing batches).
//
//   node bench/grants.ts [database=sqlite] [items=1000] [batches=3]
import { credentialsRepo } from '../src/domain/credentials/repo.ts';
import type { AuthContext } from '../src/domain/credentials/auth.ts';
import { startWorkers } from '../src/tasks/index.ts';
import { benchServices } from './services.ts';

const database = process.argv[2] ?? 'sqlite';
const ITEMS = Number(process.argv[3] ?? 1000);
const BATCHES = Number(process.argv[4] ?? 3);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const bench = await benchServices(database, 'grants');
const s = bench.services;
try {
  const { id: accountId } = await s.accounts.createAccount({ name: 'Bench school' });
  const root = await s.accounts.createRootCredential({ accountId, permissions: ['*'] });
  const credential = await credentialsRepo.get({ tx: s.db }, accountId, root.id);
  const auth = { account: { id: accountId }, credential, human: null } as unknown as AuthContext;
  const product = await s.catalog.create(accountId, { name: 'Bench course' });
  const users: { id: number }[] = [];
  for (let i = 0; i < ITEMS; i += 100) {
    const chunk = Array.from({ length: Math.min(100, ITEMS - i) }, (_, j) => ({
      email: `g${i + j}@bench.example`,
      name: `Student ${i + j}`,
    }));
    for (const u of chunk) users.push(await s.users.create(accountId, u));
  }
  await startWorkers(s);

  const batch = async (n: number) => {
    const started = performance.now();
    const op = await s.operations.createBatch(auth, {
      type: 'enrollments.grant',
      items: users.map((u) => ({
        key: `b${n}-${u.id}`,
        payload: {
          user_id: String(u.id),
          product_id: String(product.id),
          duration: 30,
          duration_unit: 'day',
        },
      })),
    });
    for (;;) {
      const now = await s.operations.get(accountId, op.id);
      if (now.status === 'succeeded' && now.done === ITEMS) break;
      if (!['queued', 'running'].includes(now.status)) throw new Error(`batch ${now.status}`);
      await sleep(5);
    }
    const seconds = (performance.now() - started) / 1000;
    return {
      seconds: Math.round(seconds * 1000) / 1000,
      itemsPerSecond: Math.round(ITEMS / seconds),
    };
  };
  const create = await batch(0);
  const renewals = [];
  for (let n = 1; n <= BATCHES; n++) renewals.push(await batch(n));
  renewals.sort((a, b) => a.seconds - b.seconds);
  const renew = renewals[Math.floor(renewals.length / 2)];
  console.log(
    JSON.stringify({
      engine: bench.postgres ? 'postgres' : 'sqlite',
      items: ITEMS,
      create,
      renew,
    }),
  );
} finally {
  await s.jobs.close();
  await bench.close();
}
