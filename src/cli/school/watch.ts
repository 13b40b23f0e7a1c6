// `npm run school -- operations watch ID`: follows an operation with a progress bar (done, failed,
// total, rate, ETA) on the specification's suggested schedule (every 2 s for 30 s, then every
// 10 s) and ends with its final status; exit code 0 only for `succeeded`.
import cliProgress from 'cli-progress';
import type { V3Client } from '../../client/index.ts';
import type { Io } from './io.ts';

const FINAL = ['succeeded', 'partially_succeeded', 'failed', 'canceled'];

/** The specification's suggested polling: every 2 s for 30 s, then every 10 s. */
export function pollDelay(elapsedMs: number): number {
  return elapsedMs < 30_000 ? 2_000 : 10_000;
}

export interface WatchOptions {
  /** The typed v3 client, authenticated (autonomous or human mode). */
  client: V3Client;
  id: string;
  io: Io;
  /** Fixed polling interval, for tests (SCHOOL_POLL_MS). */
  intervalMs?: number;
  /** Where the bar is drawn (stderr, so stdout keeps only the result). */
  stream?: NodeJS.WritableStream;
}

export async function watch(o: WatchOptions): Promise<number> {
  const started = Date.now();
  const stream = o.stream ?? process.stderr;
  const bar = new cliProgress.SingleBar(
    {
      format:
        '{bar} {percentage}% | {value}/{total} done, {failed} failed | {rate}/s | ETA {eta_formatted}',
      stream,
      // Without a terminal (CI, a pipe) the bar is printed as one line per poll.
      noTTYOutput: true,
      notTTYSchedule: 0,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let shown = false;
  for (;;) {
    const { data, error, response } = await o.client.GET('/operations/{operation_id}', {
      params: { path: { operation_id: o.id } },
    });
    if (!data) {
      if (shown) bar.stop();
      o.io.err(
        `error: ${error?.error?.code ?? response.status}: ${error?.error?.message ?? response.statusText}`,
      );
      return 1;
    }
    const op = data.data;
    const seconds = Math.max((Date.now() - started) / 1000, 0.001);
    const payload = {
      failed: op.progress.failed,
      rate: (op.progress.done / seconds).toFixed(1),
    };
    const value = op.progress.done + op.progress.failed;
    if (!shown) {
      bar.start(op.progress.total, value, payload);
      shown = true;
    } else bar.update(value, payload);
    if (FINAL.includes(op.status)) {
      bar.stop();
      o.io.out(
        `Operation ${op.id} (${op.type}): ${op.status}, ${op.progress.done} done, ` +
          `${op.progress.failed} failed of ${op.progress.total}` +
          (op.error ? ` (${op.error.code}: ${op.error.message})` : ''),
      );
      return op.status === 'succeeded' ? 0 : 1;
    }
    const delay = o.intervalMs ?? pollDelay(Date.now() - started);
    await new Promise((r) => setTimeout(r, delay));
  }
}
