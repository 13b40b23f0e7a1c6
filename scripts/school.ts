// `npm run school -- <command>`: the School Platform CLI (OAuth client service-cli).
import '../src/node-version.mjs'; // first: an older Node is told so
import { main } from '../src/cli/school/main.ts';

process.exitCode = await main(process.argv.slice(2));
