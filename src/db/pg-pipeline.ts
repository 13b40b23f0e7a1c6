// PostgreSQL: statements that travel together, one round trip for several (the extended query
// protocol allows any number of Parse/Bind/Execute before one Sync; node-postgres sends one
// statement and waits for its answer). Used on the request pool's connections for what a
// transaction always sends around its work (spec/DECISIONS.md, "BEGIN and COMMIT sent with a
// statement"):
// - knex's `BEGIN;` is held back and sent in front of the transaction's first statement;
// - statements given to `withCommit` are sent in front of knex's `COMMIT;`. If one fails, the
//   server skips the rest and the COMMIT, and the transaction is rolled back here before knex
//   hears of it, so the connection goes back to the pool clean and the transaction's promise
//   rejects with that error (or the one the step maps it to): nothing of it is committed.
// Not behind a transaction pooler (DATABASE_SESSION_URL set): there every statement goes alone.
import { createRequire } from 'node:module';
import type { Tx } from './engine.ts';

const load = createRequire(import.meta.url);
// node-postgres's own result reader and value encoder (its package exports lib/*).
const Result = load('pg/lib/result.js') as new (rowMode: unknown, types: unknown) => PgResult;
const { prepareValue } = load('pg/lib/utils.js') as { prepareValue: (v: unknown) => unknown };

interface PgResult {
  command: string | null;
  rowCount: number | null;
  rows: Record<string, unknown>[];
  addFields(fields: unknown[]): void;
  parseRow(fields: unknown[]): Record<string, unknown>;
  addRow(row: Record<string, unknown>): void;
  addCommandComplete(msg: unknown): void;
}

/** One statement: `$n` parameters; a name makes it a prepared statement of the connection. */
export interface Step {
  text: string;
  values?: readonly unknown[];
  name?: string;
  /** The error the pipeline rejects with when this step fails (its own, when absent). */
  failure?: (err: Error) => Error;
}

type Callback = (err: Error | null, result?: unknown) => void;

/**
 * A node-postgres "submittable": its steps, then one Sync. At most one named statement is prepared
 * per pipeline, its Parse first, so the client's own bookkeeping of prepared statements, which
 * reads the first ParseComplete as the query's `name`, stays right; another named step that is
 * not prepared yet goes unnamed this time (a later pipeline prepares it).
 */
class Pipeline {
  name?: string;
  text?: string;
  callback?: Callback;
  private readonly steps: Step[];
  private readonly onEnd: (err: Error | null, results: PgResult[]) => void;
  private readonly results: PgResult[];
  private step = 0;
  private failed = false;
  constructor(
    steps: Step[],
    types: unknown,
    onEnd: (err: Error | null, results: PgResult[]) => void,
  ) {
    this.steps = steps;
    this.onEnd = onEnd;
    this.results = steps.map(() => new Result(undefined, types));
  }

  submit(connection: any): Error | null {
    const parsed = (name: string) =>
      connection.parsedStatements[name] !== undefined ||
      connection.submittedNamedStatements[name] !== undefined;
    const prepare = this.steps.find((s) => s.name && !parsed(s.name));
    // Each step's statement as sent ('' for unnamed).
    const names = this.steps.map((s) =>
      s.name && (s.name === prepare?.name || parsed(s.name)) ? s.name : '',
    );
    connection.stream.cork?.();
    try {
      if (prepare) {
        connection.parse({ text: prepare.text, name: prepare.name, types: [] });
        connection.submittedNamedStatements[prepare.name!] = prepare.text;
        this.name = prepare.name;
        this.text = prepare.text;
      }
      for (const [i, s] of this.steps.entries()) {
        const name = names[i]!;
        if (!name) connection.parse({ text: s.text, name: '', types: [] });
        connection.bind({
          portal: '',
          statement: name,
          values: s.values ?? [],
          valueMapper: prepareValue,
        });
        connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '', rows: 0 });
      }
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(msg: { fields: unknown[] }) {
    this.results[this.step]?.addFields(msg.fields);
  }
  handleDataRow(msg: { fields: unknown[] }) {
    const r = this.results[this.step];
    if (r) r.addRow(r.parseRow(msg.fields));
  }
  handleCommandComplete(msg: unknown) {
    this.results[this.step++]?.addCommandComplete(msg);
  }
  handleEmptyQuery() {
    this.step++;
  }
  handlePortalSuspended() {}
  handleCopyInResponse(connection: any) {
    connection.sendCopyFail('No source stream defined');
  }
  handleCopyData() {}
  /** The server skips the rest until the Sync; the client has dropped this query already. */
  handleError(err: Error) {
    if (this.failed) return;
    this.failed = true;
    this.onEnd(this.steps[this.step]?.failure?.(err) ?? err, this.results);
  }
  handleReadyForQuery() {
    if (!this.failed) this.onEnd(null, this.results);
  }
}

let trips = 0;
/** Round trips sent on folding connections so far (bench/queries.ts). */
export const roundTrips = () => trips;

/** Sends the steps in one round trip on a node-postgres client; resolves with each one's result. */
export function pipeline(client: any, steps: Step[]): Promise<PgResult[]> {
  trips++;
  return new Promise((resolve, reject) => {
    const p = new Pipeline(steps, client._types, (err, results) =>
      err ? reject(err) : resolve(results),
    );
    send(client).call(client, p);
  });
}

const originals = new WeakMap<object, (...args: any[]) => any>();
const send = (client: any): ((...args: any[]) => any) => originals.get(client) ?? client.query;
/** Per connection: a BEGIN held back, and the statements that go with the next COMMIT. */
const heldBegin = new WeakSet<object>();
const beforeCommit = new WeakMap<object, Step[]>();

const PLAIN = new Set(['text', 'values', 'name']);
const done = (command: string) => ({ command, rowCount: null, rows: [], fields: [] });

/** Wraps a request-pool connection's `query` (knex's pool `afterCreate`). */
export function foldTransactionEnds(client: any): void {
  const original = client.query;
  originals.set(client, original);
  const query = (...args: any[]) => {
    trips++;
    return original.apply(client, args);
  };
  client.query = function (config: any, values?: any, callback?: any) {
    const cb: Callback | undefined = typeof values === 'function' ? values : callback;
    // knex calls query({ text, values[, name] }, callback); anything else goes as it came.
    const plain =
      cb && typeof config?.text === 'string' && Object.keys(config).every((k) => PLAIN.has(k));
    if (!plain) return flushThen(client, () => query(config, values, callback));
    const text: string = config.text;
    const hasValues = Array.isArray(config.values) && config.values.length > 0;
    if (text === 'BEGIN;' && !heldBegin.has(client)) {
      heldBegin.add(client);
      return void process.nextTick(cb, null, done('BEGIN'));
    }
    if (text === 'ROLLBACK') beforeCommit.delete(client);
    if (heldBegin.has(client)) {
      // A transaction that sent nothing ends without a round trip.
      if (text === 'COMMIT;' || text === 'ROLLBACK') {
        heldBegin.delete(client);
        beforeCommit.delete(client);
        return void process.nextTick(cb, null, done(text === 'ROLLBACK' ? 'ROLLBACK' : 'COMMIT'));
      }
      // Only a statement with parameters or a name is sure to be one statement (a text without
      // them may hold several, which the extended protocol refuses): others go after a BEGIN.
      if (hasValues || config.name) {
        heldBegin.delete(client);
        const step = { text, values: config.values, name: config.name };
        return void pipeline(client, [{ text: 'BEGIN' }, step]).then(
          (r) => cb(null, r[1]),
          (err) => cb(err),
        );
      }
      return flushThen(client, () => query(config, cb));
    }
    const steps = beforeCommit.get(client);
    if (text === 'COMMIT;' && steps) {
      beforeCommit.delete(client);
      return void pipeline(client, [...steps, { text: 'COMMIT' }]).then(
        (r) => cb(null, r[r.length - 1]),
        // The COMMIT was skipped: end the transaction here, then report the statement's error.
        (err) => query('ROLLBACK', () => cb(err)),
      );
    }
    return query(config, cb);
  };
}

/** Sends a held BEGIN on its own first (node-postgres keeps the order of what it is given). */
function flushThen<T>(client: any, next: () => T): T {
  if (heldBegin.delete(client)) {
    trips++;
    originals.get(client)!.call(client, 'BEGIN', () => undefined);
  }
  return next();
}

/**
 * Keeps `step` to be sent with the transaction's COMMIT (after those kept before it), in one round
 * trip; false when the connection does not fold (the caller sends it itself). If it fails, nothing
 * is committed and the transaction's promise rejects with its error (or its `failure`'s).
 */
export async function withCommit({ tx }: { tx: Tx }, step: Step): Promise<boolean> {
  if (!tx.isTransaction) return false;
  const client = await (tx.client as any).acquireConnection();
  if (!originals.has(client)) return false;
  const steps = beforeCommit.get(client);
  if (steps) steps.push(step);
  else beforeCommit.set(client, [step]);
  // Shown where knex's statements are (bench/queries.ts listens to them).
  (tx.client as any).emit('query', { sql: step.text, bindings: step.values });
  return true;
}

/** The connection of a transaction, when it folds (the steps can go in one round trip). */
export async function foldingConnection({ tx }: { tx: Tx }): Promise<unknown | null> {
  // Outside a transaction this would take a connection from the pool and keep it.
  if (!tx.isTransaction) return null;
  const client = await (tx.client as any).acquireConnection();
  return originals.has(client) ? client : null;
}

/** Sends steps in one round trip on the transaction's connection, a held BEGIN in front. */
export async function inPipeline(client: any, tx: Tx, steps: Step[]): Promise<PgResult[]> {
  for (const s of steps) (tx.client as any).emit('query', { sql: s.text, bindings: s.values });
  if (!heldBegin.delete(client)) return pipeline(client, steps);
  return (await pipeline(client, [{ text: 'BEGIN' }, ...steps])).slice(1);
}
