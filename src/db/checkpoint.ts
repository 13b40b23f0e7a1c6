// WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside whichever commit
// crosses 1000 WAL pages, and its fsyncs stall the event loop for milliseconds: on a virtual disk
// that was the largest single cost of a GET (every v3 call commits an audit entry). The writer
// turns the automatic checkpoint off; a worker thread with its own connection runs PASSIVE
// checkpoints instead, at the same threshold. PASSIVE never blocks the writer or the readers. A
// crash loses nothing: committed frames stay in the WAL, and SQLite replays them when the file is
// next opened. One checkpointer for the database's files (the audit trail's is another on SQLite).
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const POLL_MS = 50;
/** SQLite's own automatic threshold: about 4 MiB of 4 KiB pages. */
const THRESHOLD_FRAMES = 1000;
/** Below the threshold, committed frames still reach the database file within this time. */
const MAX_DELAY_MS = 1000;

// CommonJS run with eval: the worker needs no TypeScript loader. Each poll reads the wal-index
// header in the -shm file (layout: sqlite.org/walformat.html): mxFrame, the last frame of the
// WAL, at byte 16; nBackfill, the last frame already copied to the database, at byte 96. Every
// checkpoint costs two fsyncs, so it runs only when enough is waiting, or something has waited
// too long. If the header cannot be read, it checkpoints on every poll. The handles on -shm are
// closed only after every connection of this process to the database is: closing any handle on a
// file drops every POSIX lock the process holds on it, the writer's included. A checkpoint that
// keeps failing ends the worker, so the writer's fallback takes over. One thread serves every file
// (the main one and the audit trail's): a thread costs tens of milliseconds of CPU to start, paid
// by every process that opens the database (each CLI call, each test's app).
const SOURCE = `
const fs = require('node:fs');
const le = require('node:os').endianness() === 'LE';
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const files = workerData.filenames.map((filename) => {
  const db = new Database(filename, { fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  return { filename, db, shm: null, since: 0, failures: 0 };
});
const header = Buffer.alloc(100);
function pending(f) {
  try {
    if (f.shm === null) f.shm = fs.openSync(f.filename + '-shm', 'r');
    if (fs.readSync(f.shm, header, 0, 100, 0) < 100) return Infinity;
    // Native byte order.
    const mxFrame = le ? header.readUInt32LE(16) : header.readUInt32BE(16);
    const backfilled = le ? header.readUInt32LE(96) : header.readUInt32BE(96);
    return mxFrame > backfilled ? mxFrame - backfilled : 0;
  } catch {
    return Infinity;
  }
}
function checkpoint(f) {
  f.since = 0;
  try {
    f.db.pragma('wal_checkpoint(PASSIVE)');
    f.failures = 0;
  } catch (err) {
    if (++f.failures >= 20) throw err; // the worker dies with it: see Checkpointer's fallback
  }
}
const timer = setInterval(() => {
  for (const f of files) {
    const frames = pending(f);
    if (frames === 0) continue;
    f.since += workerData.pollMs;
    if (frames >= workerData.thresholdFrames || f.since >= workerData.maxDelayMs) checkpoint(f);
  }
}, workerData.pollMs);
parentPort.on('message', () => {
  clearInterval(timer);
  for (const f of files) checkpoint(f);
  for (const f of files) f.db.close();
  for (const f of files) if (f.shm !== null) fs.closeSync(f.shm);
  parentPort.close();
});
`;

export class Checkpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;
  private closing = false;

  /**
   * `fallback` runs if the worker dies: the writer checkpoints by itself again (slower, but the
   * WAL must not grow without bound).
   */
  constructor(filenames: string[], fallback: (err: unknown) => void) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(SOURCE, {
      eval: true,
      workerData: {
        driver,
        filenames,
        pollMs: POLL_MS,
        thresholdFrames: THRESHOLD_FRAMES,
        maxDelayMs: MAX_DELAY_MS,
      },
    });
    // Never keeps a process alive (the admin CLI exits when its work is done).
    this.worker.unref();
    let failure: unknown = null;
    this.worker.on('error', (err) => (failure = err));
    this.exited = new Promise((resolve) =>
      this.worker.once('exit', (code) => {
        if (!this.closing) fallback(failure ?? new Error(`checkpointer exited with code ${code}`));
        resolve();
      }),
    );
  }

  /**
   * A last checkpoint, then the worker's connection closes. Only once the writer and the reader
   * are closed (see closeSideConnections).
   */
  async close(): Promise<void> {
    this.closing = true;
    this.worker.ref(); // the process waits for the last checkpoint
    this.worker.postMessage('close');
    await this.exited;
  }
}
