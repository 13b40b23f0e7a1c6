#!/usr/bin/env node
// `npx school ...` (or `school` once `npm link`ed): the CLI without npm's banner. The sources are
// TypeScript run through tsx, as `npm start` runs the server.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/school/main.ts');
process.exitCode = await main(process.argv.slice(2));
