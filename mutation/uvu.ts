// Stryker's test command: runs the uvu suites matching a pattern and exits 1 unless every test
// passed. uvu's own exit code is 0 even when a test fails (with --bail too), so the tally is read
// from its report, as scripts/test.ts does. Node strips the types itself, of the suites and of the
// mutated sources in Stryker's sandbox alike (its instrumented code is plain JavaScript): no tsx. --bail: a mutant is killed at the first
// failing test, so killed mutants cost less than survivors.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const [pattern] = process.argv.slice(2);
if (!pattern) throw new Error('usage: node mutation/uvu.ts <pattern>');
// Node directly, not npx: the launcher's second or so counts once per mutant.
const uvu = path.resolve('node_modules/uvu/bin.js');
const args = [uvu, 'test', pattern, '--bail', '-c', 'false'];
const run = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
const out = run.stdout + run.stderr;
process.stdout.write(out);
const num = (name: string) => Number(out.match(new RegExp(`${name}:\\s+(\\d+)`))?.[1] ?? NaN);
const total = num('Total');
process.exit(run.status === 0 && total > 0 && num('Passed') === total ? 0 : 1);
