// Imported first by every entry point, before anything native (better-sqlite3) loads: on an older
// Node the native module crashes the process with no output (a segfault), so say it plainly.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `This server needs Node.js 22.18 or later (24 recommended); this is ${process.version}. ` +
      'Install Node 24, then run `rm -rf node_modules && npm ci` again.\n',
  );
  process.exit(2);
}
export {};
