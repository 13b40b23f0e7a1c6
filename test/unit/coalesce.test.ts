// coalesce / coalesceBy (src/domain/shared/coalesce.ts): one run at a time (per key), callers that
// arrive during a run share the next one, and every caller's result comes from a run that began
// after its call; keys do not wait for each other, and an idle key is forgotten.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { coalesceBy } from '../../src/domain/shared/coalesce.ts';

const t = suite('coalesce');

/** A task per key whose runs are finished by hand; each run's result is its number. */
function manual() {
  const runs: { key: string; n: number; finish: () => void }[] = [];
  let count = 0;
  const task = (key: string) =>
    new Promise<number>((resolve) => {
      const n = ++count;
      runs.push({ key, n, finish: () => resolve(n) });
    });
  return { runs, task };
}
const tick = () => new Promise((r) => setImmediate(r));

t('per key: one run at a time, callers during a run share the next one', async () => {
  const { runs, task } = manual();
  const call = coalesceBy(task);
  const first = call('a');
  await tick();
  assert.is(runs.length, 1);
  // Three callers while run 1 runs: one run queued for them all, started when run 1 ends.
  const during = [call('a'), call('a'), call('a')];
  await tick();
  assert.is(runs.length, 1, 'nothing starts while run 1 runs');
  runs[0]!.finish();
  assert.is(await first, 1);
  await tick();
  assert.is(runs.length, 2, 'one run for the three');
  runs[1]!.finish();
  assert.equal(await Promise.all(during), [2, 2, 2]);
});

t('keys run independently; an idle key starts at once again', async () => {
  const { runs, task } = manual();
  const call = coalesceBy(task);
  const a = call('a');
  const b = call('b');
  await tick();
  assert.equal(
    runs.map((r) => r.key),
    ['a', 'b'],
    'b does not wait for a',
  );
  runs[1]!.finish();
  assert.is(await b, 2);
  runs[0]!.finish();
  assert.is(await a, 1);
  const again = call('a');
  await tick();
  assert.is(runs.length, 3, 'a new run, not a shared old one');
  runs[2]!.finish();
  assert.is(await again, 3);
});

t('a failed run fails its callers only; the queued run still goes', async () => {
  let n = 0;
  let fail!: (e: Error) => void;
  const call = coalesceBy(
    () =>
      new Promise<number>((resolve, reject) => {
        n++;
        if (n === 1) fail = reject;
        else resolve(n);
      }),
  );
  const first = call('k');
  await tick();
  const second = call('k');
  fail(new Error('boom'));
  const err = await first.then(
    () => null,
    (e: Error) => e,
  );
  assert.is(err?.message, 'boom');
  assert.is(await second, 2);
});

t.run();
