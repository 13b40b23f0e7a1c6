// WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside whichever commit
// crosses 1000 WAL pages, and its fsyncs stall the event loop for milliseconds: on a virtual disk
// that was the largest single cost of a GET (every v3 call commits an audit entry). The writer
// turns the automatic checkpoint off; a worker thread with its own connection runs PASSIVE
// checkpoints instead, at the same threshold. PASSIVE never blocks the writer or the readers. A
// crash loses nothing: committed frames stay in the WAL, and SQLite replays them when the file is
// next opened. One checkpointer per database file (the audit trail has its own on SQLite).
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
// too long. If the header cannot be read, it checkpoints on every poll. The handle on -shm is
// closed only after every connection of this process to the database is: closing any handle on a
// file drops every POSIX lock the process holds on it, the writer's included. A checkpoint that
// keeps failing ends the worker, so the writer's fallback takes over.
const SOURCE = `
const fs = require('node:fs');
const le = require('node:os').endianness() === 'LE';
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.filename, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
const header = Buffer.alloc(100);
let shm = null;
let since = 0;
let failures = 0;
function pending() {
  try {
    if (shm === null) shm = fs.openSync(workerData.filename + '-shm', 'r');
    if (fs.readSync(shm, header, 0, 100, 0) < 100) return Infinity;
    // Native byte order.
    const mxFrame = le ? header.readUInt32LE(16) : header.readUInt32BE(16);
    const backfilled = le ? header.readUInt32LE(96) : header.readUInt32BE(96);
    return mxFrame > backfilled ? mxFrame - backfilled : 0;
  } catch {
    return Infinity;
  }
}
function checkpoint() {
  since = 0;
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
    failures = 0;
  } catch (err) {
    if (++failures >= 20) throw err; // the worker dies with it: see Checkpointer's fallback
  }
}
const timer = setInterval(() => {
  const frames = pending();
  if (frames === 0) return;
  since += workerData.pollMs;
  if (frames >= workerData.thresholdFrames || since >= workerData.maxDelayMs) checkpoint();
}, workerData.pollMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  if (shm !== null) fs.closeSync(shm);
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
  constructor(filename: string, fallback: (err: unknown) => void) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(SOURCE, {
      eval: true,
      workerData: {
        driver,
        filename,
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
