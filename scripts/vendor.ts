// vendor/scalar/: the one file of @scalar/api-reference the server reads (its browser bundle,
// served at /docs/assets/scalar.js), its version and its licence, committed so that a production
// install (`npm ci --omit=dev`) leaves out the package and its tree (265 of 536 packages). The
// package stays a development dependency and the source: after upgrading it, `npm run vendor`
// copies the bundle again; `--check` (part of `npm run check`) fails while the two differ, as
// generate.ts --check does for generated/. The package ships no LICENSE file: vendor/scalar/LICENSE
// is Scalar's repository's (MIT, as the package's `license` says), and is checked to be there.
import fs from 'node:fs';
import path from 'node:path';

// `--root DIR` works on another copy of the tree (the test of the check uses one).
const rootAt = process.argv.indexOf('--root');
const root =
  rootAt > 0 ? path.resolve(process.argv[rootAt + 1]!) : path.resolve(import.meta.dirname, '..');
const source = path.join(root, 'node_modules/@scalar/api-reference');
const target = path.join(root, 'vendor/scalar');
const BUNDLE = 'dist/browser/standalone.js';

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

if (!fs.existsSync(path.join(source, BUNDLE)))
  fail(`${source} is not installed: run \`npm ci\` (it is a development dependency).`);
const pkg = JSON.parse(fs.readFileSync(path.join(source, 'package.json'), 'utf8'));
if (pkg.license !== 'MIT')
  fail(
    `@scalar/api-reference ${pkg.version} is licensed ${pkg.license}, not MIT: review vendor/scalar/LICENSE.`,
  );
const wanted = {
  'standalone.js': fs.readFileSync(path.join(source, BUNDLE)),
  VERSION: `${pkg.version}\n`,
};

if (process.argv.includes('--check')) {
  const drifted = Object.entries(wanted).filter(([name, content]) => {
    const file = path.join(target, name);
    return !fs.existsSync(file) || !fs.readFileSync(file).equals(Buffer.from(content));
  });
  if (!fs.existsSync(path.join(target, 'LICENSE'))) drifted.push(['LICENSE', '']);
  if (drifted.length)
    fail(
      `vendor/scalar/ differs from node_modules/@scalar/api-reference ${pkg.version}: ` +
        `${drifted.map(([n]) => n).join(', ')}. Run \`npm run vendor\` and commit the result.`,
    );
  console.log(`vendor/scalar/ is @scalar/api-reference ${pkg.version}`);
} else {
  fs.mkdirSync(target, { recursive: true });
  for (const [name, content] of Object.entries(wanted))
    fs.writeFileSync(path.join(target, name), content);
  console.log(`vendor/scalar/ now holds @scalar/api-reference ${pkg.version}`);
}
