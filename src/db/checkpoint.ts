// WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside whichever commit
// crosses 1000 WAL pages, and its fsyncs stall the event loop for milliseconds: on a virtual disk
// that was the largest single cost of a GET (every v3 call commits an audit entry). The writer
// turns the automatic checkpoint off; a worker thread with its own connection runs PASSIVE
// checkpoints on a timer instead. PASSIVE never blocks the writer or the readers, and does no I/O
// when nothing new was committed. A crash loses nothing: committed frames stay in the WAL, and
// SQLite replays them when the file is next opened.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const EVERY_MS = 100;

// CommonJS run with eval: the worker needs no TypeScript loader.
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.filename, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
const checkpoint = () => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch { /* the next tick tries again */ }
};
const timer = setInterval(checkpoint, workerData.everyMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

export class Checkpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;

  constructor(filename: string) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(SOURCE, {
      eval: true,
      workerData: { driver, filename, everyMs: EVERY_MS },
    });
    // Never keeps a process alive (the admin CLI exits when its work is done).
    this.worker.unref();
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.on('error', (err) => process.stderr.write(`checkpointer: ${String(err)}\n`));
  }

  /** A last checkpoint, then the worker's connection closes. */
  async close(): Promise<void> {
    this.worker.postMessage('close');
    await this.exited;
  }
}
