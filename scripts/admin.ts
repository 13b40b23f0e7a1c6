// `npm run admin -- <command>`: thin entry; the CLI lives in src/cli/admin.ts.
import '../src/node-version.ts'; // first: before anything native loads
import { runAdmin } from '../src/cli/admin.ts';

// stdout carries exactly one JSON result. Libraries that print with console.log (knex prints its
// connection warnings that way) are sent to stderr, where the error JSON stays the last line.
console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args);

process.exitCode = await runAdmin(process.argv.slice(2));
