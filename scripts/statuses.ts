// Checks that every v3 operation of spec/openapi.yaml declares every status it can answer
// (src/contract/statuses.ts says which and why); `--fix` writes the missing ones in.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { fixStatuses, missingStatuses } from '../src/contract/statuses.ts';

// `--spec FILE` checks another document (the tests use small ones).
const specAt = process.argv.indexOf('--spec');
const file =
  specAt > 0
    ? path.resolve(process.argv[specAt + 1]!)
    : path.resolve(import.meta.dirname, '../spec/openapi.yaml');
const text = fs.readFileSync(file, 'utf8');

if (process.argv.includes('--fix')) {
  const { text: fixed, added } = fixStatuses(text);
  if (added.length) fs.writeFileSync(file, fixed);
  console.log(`statuses: ${added.length} responses written into ${path.basename(file)}`);
}
const missing = missingStatuses(YAML.parse(fs.readFileSync(file, 'utf8')));
if (missing.length) {
  for (const m of missing)
    console.error(
      `${m.operationId} (${m.method.toUpperCase()} ${m.path}) does not declare ${m.status}: ${m.why}`,
    );
  console.error(`${missing.length} missing; \`npm run statuses -- --fix\` writes them in.`);
  process.exit(1);
}
console.log('statuses: every operation declares what it can answer');
