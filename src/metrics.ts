// Prometheus metrics (prom-client). One registry per set of services, never prom-client's global
// one: tests build several apps in one process, and each must count only its own requests.
// Served on a listener of its own (METRICS_PORT, src/http/metrics.ts), so they are never public by
// accident. Counters are incremented where things happen; gauges are read from the database when
// scraped.
import fs from 'node:fs';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Clock } from './clock.ts';
import { isPostgres, type Db } from './db/engine.ts';
import { auditFilename } from './db/knex.ts';
import { queueStats } from './jobs/stats.ts';

/** Outcomes of one webhook delivery attempt (the webhooks job counts each attempt once). */
export type WebhookOutcome = 'delivered' | 'failed' | 'retrying' | 'dropped' | (string & {});

export class Metrics {
  readonly registry = new Registry();
  private defaults = false;

  /** Every request: v3 operationId, legacy or OAuth route, or `unmatched` (never a raw path). */
  readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, operation (v3 operationId or route) and status.',
    labelNames: ['method', 'operation', 'status'] as const,
    registers: [this.registry],
  });

  readonly duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from the first byte of the request to the response, by method and operation.',
    labelNames: ['method', 'operation'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'rate_limit_rejections_total',
    help: 'Requests refused with 429 rate_limit_exceeded, by the limit that refused them.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly idempotentReplays = new Counter({
    name: 'idempotency_replays_total',
    help: 'Responses replayed for a repeated Idempotency-Key (Idempotent-Replayed: true).',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  /** For the webhook delivery job: `services.metrics.webhookDeliveries.inc({ outcome })`. */
  readonly webhookDeliveries = new Counter({
    name: 'webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  /** Gauges read from the database on each scrape: the job queue, and SQLite's file sizes. */
  watchStorage(db: Db, clock: Clock): void {
    const registers = [this.registry];
    let stats: Promise<Awaited<ReturnType<typeof queueStats>> | null> | null = null;
    // Both queue gauges are collected in one scrape: one query serves them.
    const read = () =>
      (stats ??= queueStats(db, clock)
        .catch(() => null)
        .finally(() => setImmediate(() => (stats = null))));
    new Gauge({
      name: 'job_queue_depth',
      help: 'Jobs in the queue by state: ready (due, unclaimed), running, scheduled (not due), failed (out of attempts).',
      labelNames: ['state'] as const,
      registers,
      async collect() {
        const s = await read();
        if (!s) return;
        for (const state of ['ready', 'running', 'scheduled', 'failed'] as const)
          this.set({ state }, s[state]);
      },
    });
    new Gauge({
      name: 'job_queue_oldest_ready_age_seconds',
      help: 'How long the oldest ready job has waited past its run time (0 when none waits).',
      registers,
      async collect() {
        const s = await read();
        if (s) this.set(s.oldestReadyAgeSeconds);
      },
    });
    if (isPostgres(db)) return;
    const filename = (db.client.config.connection as { filename: string }).filename;
    if (filename === ':memory:') return;
    const files = { main: filename, audit: auditFilename(filename) };
    const size = (file: string) => {
      try {
        return fs.statSync(file).size;
      } catch {
        return 0; // not there (yet, or after a truncating checkpoint)
      }
    };
    new Gauge({
      name: 'sqlite_wal_bytes',
      help: 'Size of the SQLite write-ahead log of each file (main, audit).',
      labelNames: ['file'] as const,
      registers,
      collect() {
        for (const [name, file] of Object.entries(files))
          this.set({ file: name }, size(file + '-wal'));
      },
    });
    new Gauge({
      name: 'sqlite_file_bytes',
      help: 'Size of each SQLite database file (main, audit), free pages included.',
      labelNames: ['file'] as const,
      registers,
      collect() {
        for (const [name, file] of Object.entries(files)) this.set({ file: name }, size(file));
      },
    });
  }

  /**
   * Process metrics (CPU, memory, event-loop delay), only for a process that serves metrics: each
   * call starts an event-loop delay monitor that never stops.
   */
  collectDefaults(): void {
    if (this.defaults) return;
    this.defaults = true;
    collectDefaultMetrics({ register: this.registry });
  }
}
