// Usage: npm run client:build
// Builds packages/client into packages/client/dist: ESM JavaScript and .d.ts by tsc, plus the
// contract's types (generated/types.ts, which `npm run check` keeps in step with spec/openapi.yaml)
// copied in as dist/types.d.ts, so the package needs nothing from this repository once packed.
// tsc compiles from the repository root (the source's types.ts points into generated/); the
// package's own files are then lifted out of that tree.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const PKG = path.join(ROOT, 'packages/client');
const DIST = path.join(PKG, 'dist');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

const out = fs.mkdtempSync(path.join(os.tmpdir(), 'client-build-'));
try {
  execFileSync(process.execPath, [tsc, '-p', path.join(PKG, 'tsconfig.json'), '--outDir', out], {
    stdio: 'inherit',
  });
  fs.rmSync(DIST, { recursive: true, force: true });
  fs.cpSync(path.join(out, 'packages/client/src'), DIST, { recursive: true });
  // types.ts only re-exports types: its JavaScript is empty, its .d.ts becomes the real ones.
  fs.rmSync(path.join(DIST, 'types.js'));
  fs.copyFileSync(path.join(ROOT, 'generated/types.ts'), path.join(DIST, 'types.d.ts'));
  // The operationId table (paginate('listUsers')) is real JavaScript: it moves in beside index.js.
  for (const ext of ['.js', '.d.ts'])
    fs.copyFileSync(
      path.join(out, `generated/operations${ext}`),
      path.join(DIST, `operations${ext}`),
    );
  // tsc rewrites `./x.ts` to `./x.js` in JavaScript only; a consumer's tsc reads the .d.ts.
  for (const file of fs.readdirSync(DIST).filter((f) => /\.(d\.ts|js)$/.test(f))) {
    const text = fs.readFileSync(path.join(DIST, file), 'utf8');
    fs.writeFileSync(
      path.join(DIST, file),
      text
        .replace(/(from '\.\/[\w-]+)\.ts'/g, "$1.js'")
        .replace(
          /from (['"])(?:\.\.\/)+generated\/operations\.(?:ts|js)\1/g,
          "from './operations.js'",
        ),
    );
  }
} finally {
  fs.rmSync(out, { recursive: true, force: true });
}
const files = fs.readdirSync(DIST).sort();
console.log(`client: built ${path.relative(ROOT, DIST)} (${files.join(', ')})`);
