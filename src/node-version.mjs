// Loaded first by every entry point (`node --import ./src/node-version.mjs ...` in package.json,
// and imported again at the top of each entry, a no-op then). Plain JavaScript on purpose: an older
// Node cannot read TypeScript at all (Node 20 stops on the `.ts` extension with a stack trace) and
// on Node 20 better-sqlite3 13 segfaults with no output, so the version is told before either.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `This server needs Node.js 22.18 or later (24 recommended); this is ${process.version}. ` +
      'Install Node 24, then run `rm -rf node_modules && npm ci` again.\n',
  );
  process.exit(2);
}
// Node 22 strips types by default from 22.18 but still warns that stripping is experimental, once
// per process, on stderr: start-up output is one line per failure, so that one warning is dropped.
if (major === 22) {
  const emit = process.emitWarning;
  process.emitWarning = function (warning, ...rest) {
    if (String(warning?.message ?? warning).startsWith('Type Stripping')) return;
    return emit.call(process, warning, ...rest);
  };
}
// Node keeps what it compiled (the stripped TypeScript too) in a cache folder (NODE_COMPILE_CACHE,
// or node-compile-cache under the system's temporary folder), checked against each file's
// contents: a second start of any entry loads its modules in about half the CPU time (the
// admin CLI: 2.6 s of CPU, 1.3 s cached). Tests start hundreds of such processes.
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
