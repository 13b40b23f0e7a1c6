// Runs every uvu suite under test/ on SQLite, then again on PostgreSQL when TEST_DATABASE_URL is
// set, and ends with one line: `N passed, M failed`.
import { spawn } from 'node:child_process';

interface Tally {
  passed: number;
  failed: number;
  skipped: number;
}

function runOnce(label: string, env: NodeJS.ProcessEnv, args: string[]): Promise<Tally> {
  return new Promise((resolve) => {
    console.log(`\n=== ${label} ===`);
    const child = spawn('npx', ['uvu', '-r', 'tsx', 'test', ...args], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      out += chunk.toString();
    });
    child.on('close', (code) => {
      const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
      const num = (name: string) => Number(plain.match(new RegExp(`${name}:\\s+(\\d+)`))?.[1] ?? 0);
      const total = num('Total');
      const passed = num('Passed');
      const skipped = num('Skipped');
      // uvu's Total counts the tests that ran; skipped ones (t.skip) are not in it.
      let failed = total - passed;
      // A suite that crashed before reporting counts as a failure, never as a silent pass.
      if (code !== 0 && failed === 0) failed = 1;
      resolve({ passed, failed, skipped });
    });
  });
}

const filter = process.argv.slice(2);
const pattern = filter.length ? [filter[0]!] : ['\\.test\\.ts$'];
const { TEST_DATABASE_URL, ...sqliteEnv } = process.env;
const tallies = [await runOnce('SQLite', { ...sqliteEnv }, pattern)];
if (TEST_DATABASE_URL) tallies.push(await runOnce('PostgreSQL', { ...process.env }, pattern));
else console.log('\nTEST_DATABASE_URL is not set: the PostgreSQL pass was skipped.');
const sum = tallies.reduce((a, t) => ({
  passed: a.passed + t.passed,
  failed: a.failed + t.failed,
  skipped: a.skipped + t.skipped,
}));
console.log(
  `\n${sum.passed} passed, ${sum.failed} failed${sum.skipped ? `, ${sum.skipped} skipped` : ''}`,
);
process.exit(sum.failed ? 1 : 0);
