// npm run test:mutation [-- module ...] [--sqlite]: runs Stryker on each module of
// mutation/stryker.config.mjs in turn (all by default), then prints each mutated file's score:
// killed (timeouts included) over killed + survived + uncovered. PostgreSQL passes run for the
// modules that have them when TEST_DATABASE_URL is set; --sqlite skips them. Survivors are listed
// with where and what, to compare with mutation/equivalents.md. Not part of CI: a full run takes
// about an hour on two cores.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

// The config is plain JavaScript (Stryker loads it as it is); only its module names are read here.
const config = new URL('../mutation/stryker.config.mjs', import.meta.url).href;
const { modules } = (await import(config)) as { modules: Record<string, unknown> };

const args = process.argv.slice(2);
const sqliteOnly = args.includes('--sqlite');
const names = args.filter((a) => !a.startsWith('--'));
for (const n of names) if (!(n in modules)) throw new Error(`unknown module ${n}`);
const root = path.resolve(import.meta.dirname, '..');

interface Mutant {
  status: string;
  mutatorName: string;
  replacement?: string;
  location: { start: { line: number; column: number } };
}

const KILLED = ['Killed', 'Timeout'];
const VALID = [...KILLED, 'Survived', 'NoCoverage'];
const lines: string[] = [];

for (const name of names.length ? names : Object.keys(modules)) {
  const env: NodeJS.ProcessEnv = { ...process.env, MUTATION_MODULE: name };
  if (sqliteOnly) env.MUTATION_ENGINES = 'sqlite';
  const run = spawnSync('npx', ['stryker', 'run', 'mutation/stryker.config.mjs'], {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  const report = path.join(root, 'reports/mutation', `${process.env.MUTATION_PART ?? name}.json`);
  if (run.status !== 0 || !fs.existsSync(report)) {
    lines.push(`${name}: Stryker failed (exit ${run.status})`);
    continue;
  }
  const { files } = JSON.parse(fs.readFileSync(report, 'utf8')) as {
    files: Record<string, { mutants: Mutant[] }>;
  };
  for (const [file, { mutants }] of Object.entries(files)) {
    const valid = mutants.filter((m) => VALID.includes(m.status));
    const killed = valid.filter((m) => KILLED.includes(m.status)).length;
    const score = valid.length ? ((100 * killed) / valid.length).toFixed(1) : '-';
    // Timeouts count as kills (Stryker's rule), but a loaded machine makes false ones: say how many.
    const timeouts = valid.filter((m) => m.status === 'Timeout').length;
    lines.push(`${file}: ${score} % (${killed} of ${valid.length} killed, ${timeouts} by timeout)`);
    for (const m of valid.filter((m) => !KILLED.includes(m.status)))
      lines.push(
        `  ${m.status.toLowerCase()} ${m.location.start.line}:${m.location.start.column} ` +
          `${m.mutatorName} ${JSON.stringify(m.replacement ?? '').slice(0, 70)}`,
      );
  }
}
console.log(`\nMutation scores\n${lines.join('\n')}`);
