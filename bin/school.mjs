#!/usr/bin/env node
// `npx school ...` (or `school` once `npm link`ed): the CLI without npm's banner. The sources are
// TypeScript that Node runs itself (type stripping, Node 22.18+), as `npm start` runs the server;
// the version check comes first because an older Node cannot load them at all.
import '../src/node-version.mjs';

const { main } = await import('../src/cli/school/main.ts');
process.exitCode = await main(process.argv.slice(2));
