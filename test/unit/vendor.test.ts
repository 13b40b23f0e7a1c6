// engine: any
// scripts/vendor.ts: vendor/scalar/ is the bundle of the installed @scalar/api-reference, and
// `npm run check` (its --check) fails as soon as the two differ, on a copy of the tree.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PKG = path.join(ROOT, 'node_modules/@scalar/api-reference');

function vendor(root: string, ...args: string[]) {
  return new Promise<{ code: number; out: string }>((resolve) =>
    execFile(
      process.execPath,
      [path.join(ROOT, 'scripts/vendor.ts'), '--root', root, ...args],
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code) : 0, out: stdout + stderr }),
    ),
  );
}

const t = suite<{ root: string }>('vendor/scalar/');
t.before((ctx) => {
  ctx.root = fs.mkdtempSync(path.join(os.tmpdir(), 'school-vendor-'));
  fs.mkdirSync(path.join(ctx.root, 'node_modules/@scalar'), { recursive: true });
  fs.symlinkSync(PKG, path.join(ctx.root, 'node_modules/@scalar/api-reference'));
  fs.cpSync(path.join(ROOT, 'vendor'), path.join(ctx.root, 'vendor'), { recursive: true });
});
t.after(({ root }) => fs.rmSync(root, { recursive: true, force: true }));

t('the committed copy is the installed bundle, its version and a licence', async ({ root }) => {
  const version = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8')).version;
  assert.is(fs.readFileSync(path.join(ROOT, 'vendor/scalar/VERSION'), 'utf8'), `${version}\n`);
  assert.match(fs.readFileSync(path.join(ROOT, 'vendor/scalar/LICENSE'), 'utf8'), /^MIT License/);
  const ok = await vendor(root, '--check');
  assert.equal(ok, { code: 0, out: `vendor/scalar/ is @scalar/api-reference ${version}\n` });
});

t(
  'a bundle that differs fails the check until `npm run vendor` copies it again',
  async ({ root }) => {
    const file = path.join(root, 'vendor/scalar/standalone.js');
    fs.appendFileSync(file, '\n');
    const drifted = await vendor(root, '--check');
    assert.is(drifted.code, 1);
    assert.match(
      drifted.out,
      /vendor\/scalar\/ differs from .* standalone\.js\. Run `npm run vendor`/,
    );
    fs.rmSync(path.join(root, 'vendor/scalar/LICENSE'));
    assert.match((await vendor(root, '--check')).out, /: standalone\.js, LICENSE\./);
    fs.writeFileSync(path.join(root, 'vendor/scalar/LICENSE'), 'MIT License\n');
    assert.is((await vendor(root)).code, 0);
    assert.ok(
      fs.readFileSync(file).equals(fs.readFileSync(path.join(PKG, 'dist/browser/standalone.js'))),
    );
    assert.is((await vendor(root, '--check')).code, 0);
  },
);

t.run();
