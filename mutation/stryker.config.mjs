// Mutation testing of the modules whose guarantees matter most (npm run test:mutation; not part of
// CI). One module per Stryker run, picked by MUTATION_MODULE (scripts/mutation.ts sets it): each
// runs only the uvu suites that cover it, with the command runner (uvu has no Stryker plugin), on
// SQLite and, for code that branches on the engine, on PostgreSQL too (TEST_DATABASE_URL).
// Survivors that no test can kill are listed, each with why, in mutation/equivalents.md.
import fs from 'node:fs';

/** @type {Record<string, { mutate: string[]; tests: string[]; postgres: boolean }>} */
export const modules = {
  // The lock is in memory on SQLite and a row with a lease on PostgreSQL: both engines.
  idempotency: {
    mutate: ['src/domain/idempotency/service.ts'],
    tests: ['v3/idempotency.test.ts', 'v3/idempotency-repeats.test.ts'],
    postgres: true,
  },
  // The runner's one engine branch (set-based chunks, PostgreSQL's default) is reached on SQLite
  // through a type with setBasedOnSqlite (operations-leases); the SQL is in repo.ts.
  // imports.test.ts: import processing is the one caller of openWith (a total its fill counts).
  operations: {
    mutate: ['src/domain/operations/runner.ts', 'src/domain/operations/service.ts'],
    tests: ['v3/operations.test.ts', 'v3/operations-leases.test.ts', 'v3/imports.test.ts'],
    postgres: false,
  },
  webhooks: {
    mutate: ['src/domain/webhooks/targets.ts', 'src/domain/webhooks/signature.ts'],
    tests: [
      'unit/webhook-targets.test.ts',
      'unit/webhook-signing.test.ts',
      'unit/webhook-target-urls.test.ts',
      'unit/webhook-embedded-ipv4.test.ts',
    ],
    postgres: false,
  },
  input: {
    mutate: ['src/http/v3/stages/input.ts'],
    tests: [
      'v3/body.test.ts',
      'v3/input-hardening.test.ts',
      'v3/auth.test.ts',
      'v3/input-stage.test.ts',
    ],
    postgres: false,
  },
};

const name = process.env.MUTATION_MODULE ?? 'idempotency';
const mod = modules[name];
if (!mod) throw new Error(`MUTATION_MODULE: one of ${Object.keys(modules).join(', ')}`);
const pgUrl = process.env.TEST_DATABASE_URL;
// The suites by file name: a pattern that matched nothing once ran one suite of three unnoticed.
for (const file of mod.tests)
  if (!fs.existsSync(new URL(`../test/${file}`, import.meta.url)))
    throw new Error(
      `mutation/stryker.config.mjs: ${name} names test/${file}, which does not exist`,
    );
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
// MUTATION_TESTS: another pattern of suites, for a quicker partial look (its scores are not comparable).
const tests = process.env.MUTATION_TESTS ?? `^(${mod.tests.map(escape).join('|')})$`;
const uvu = `node mutation/uvu.ts '${tests}'`;
const passes = [`env -u TEST_DATABASE_URL ${uvu}`];
if (mod.postgres && pgUrl && process.env.MUTATION_ENGINES !== 'sqlite')
  passes.push(`TEST_DATABASE_URL='${pgUrl}' ${uvu}`);

export default {
  testRunner: 'command',
  commandRunner: { command: passes.join(' && ') },
  coverageAnalysis: 'off',
  // MUTATION_FILES: some of the module's files (comma-separated), to measure a slow module in parts.
  mutate: process.env.MUTATION_FILES?.split(',') ?? mod.mutate,
  // The machine's cores are shared; one mutant at a time keeps the suites' timing honest
  // (MUTATION_CONCURRENCY to use more on a quiet machine).
  concurrency: Number(process.env.MUTATION_CONCURRENCY ?? 1),
  // Generous: under load a suite that takes 10 s quiet takes 40+; a false timeout counts as a kill.
  timeoutMS: 120_000,
  // event-recorder: each mutant's result as it is known, so a run stopped early still tells.
  reporters: ['clear-text', 'progress', 'json', 'event-recorder'],
  eventReporter: { baseDir: `reports/mutation/events-${process.env.MUTATION_PART ?? name}` },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  // MUTATION_PART names the report of a run limited with --mutate file:lines (a slow module in parts).
  jsonReporter: { fileName: `reports/mutation/${process.env.MUTATION_PART ?? name}.json` },
  tempDirName: '.stryker-tmp',
  // Stryker links a node_modules directory, not a node_modules that is itself a link (a git
  // worktree's); the docs read files under <root>/node_modules, so the sandbox needs one.
  buildCommand: 'ln -sfn ../../node_modules node_modules',
  ignorePatterns: ['data', 'bench', 'docs', 'reports', '.bench', '.ci', 'spec/releases'],
};
