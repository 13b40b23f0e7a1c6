// `imports run FILE` (upload, create, analyse, show what is not ready, process with a progress
// bar) and `exports create` / `exports download ID` (follow the export's operation, then fetch
// its CSV). Each step is the v3 route a script would call; the CLI only chains and reports them.
import { idempotencyKey, type V3Client } from '../../client/index.ts';
import { download, fail, upload } from './files.ts';
import type { Io } from './io.ts';
import { watch } from './watch.ts';

const FINAL = ['succeeded', 'partially_succeeded', 'failed', 'canceled'];
const MAPPED = ['email', 'product_external_id', 'status'] as const;
type Field = (typeof MAPPED)[number];

/** A command line that cannot work (exit 2); `bare`: the message is printed as it is. */
export class UsageError extends Error {
  readonly bare: boolean;
  constructor(message: string, bare = false) {
    super(message);
    this.bare = bare;
  }
}

/** `email=E-mail,status=Situacao` -> the import's mapping (CSV header of each field). */
export function parseMapping(text: string | undefined): Partial<Record<Field, string>> {
  const mapping: Partial<Record<Field, string>> = {};
  if (!text) return mapping;
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    const field = pair.slice(0, at).trim();
    const header = pair.slice(at + 1).trim();
    if (at < 1 || !header || !(MAPPED as readonly string[]).includes(field))
      throw new UsageError(
        `--map takes FIELD=HEADER pairs separated by commas, FIELD one of ${MAPPED.join(', ')}; got "${pair}"`,
      );
    mapping[field as Field] = header;
  }
  return mapping;
}

/** Polls an operation until it is final (no bar: for the one-item steps). */
async function settle(client: V3Client, id: string, intervalMs: number) {
  for (;;) {
    const got = await client.GET('/operations/{operation_id}', {
      params: { path: { operation_id: id } },
    });
    if (!got.data) fail('operation', got.error, got.response.status);
    if (FINAL.includes(got.data.data.status)) return got.data.data;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface ImportRunOptions {
  client: V3Client;
  file: string;
  mapping: Partial<Record<Field, string>>;
  duplicatePolicy?: 'skip' | 'keep_last';
  /** Analyse only: report, process nothing. */
  dryRun: boolean;
  stateDir: string;
  io: Io;
  intervalMs?: number;
}

export async function runImport(o: ImportRunOptions): Promise<number> {
  const c = o.client;
  const interval = o.intervalMs ?? 1000;
  const fileId = await upload({
    client: c,
    file: o.file,
    purpose: 'import',
    contentType: 'text/csv',
    stateDir: o.stateDir,
    io: o.io,
  });
  const created = await c.POST('/imports', {
    params: { header: { 'Idempotency-Key': idempotencyKey() } },
    body: {
      file_id: fileId,
      type: 'students_access',
      ...(Object.keys(o.mapping).length ? { mapping: o.mapping } : {}),
      ...(o.duplicatePolicy ? { duplicate_policy: o.duplicatePolicy } : {}),
    },
  });
  if (!created.data) fail('create import', created.error, created.response.status);
  const id = created.data.data.id;
  o.io.err(`Import ${id} created from file ${fileId}; analysing.`);

  const analysis = await c.POST('/imports/{import_id}/analyses', {
    params: { path: { import_id: id }, header: { 'Idempotency-Key': idempotencyKey() } },
  });
  if (!analysis.data) fail('analyse', analysis.error, analysis.response.status);
  await settle(c, analysis.data.data.id, interval);
  const got = await c.GET('/imports/{import_id}', { params: { path: { import_id: id } } });
  if (!got.data) fail('import', got.error, got.response.status);
  const imp = got.data.data;
  if (imp.status === 'failed') {
    o.io.err(`error: the file could not be analysed: ${imp.failure_reason ?? 'unknown reason'}`);
    return 1;
  }
  const r = imp.rows;
  o.io.out(
    `Import ${id}: ${r.total} rows, ${r.ready} ready, ${r.not_ready} not ready, ${r.ignored} ignored.`,
  );
  if (r.not_ready > 0) {
    const rows = await c.GET('/imports/{import_id}/rows', {
      params: { path: { import_id: id }, query: { status: 'not_ready', limit: 10 } },
    });
    for (const row of rows.data?.data ?? [])
      o.io.out(`  row ${row.row}: ${row.reason} (${row.email ?? 'no email'})`);
    if (r.not_ready > 10) o.io.out(`  ... GET /api/v3/imports/${id}/rows?status=not_ready`);
  }
  if (o.dryRun) return 0;
  if (r.ready === 0) {
    o.io.err('Nothing to process: no row is ready.');
    return 1;
  }
  const attempt = await c.POST('/imports/{import_id}/processing-attempts', {
    params: { path: { import_id: id }, header: { 'Idempotency-Key': idempotencyKey() } },
  });
  if (!attempt.data) fail('process', attempt.error, attempt.response.status);
  return watch({
    client: c,
    id: attempt.data.data.operation_id,
    io: o.io,
    stream: o.io.bars,
    intervalMs: o.intervalMs,
  });
}

export interface ExportCreateOptions {
  client: V3Client;
  columns: string[];
  filters: Record<string, unknown>;
  out?: string;
  io: Io;
  intervalMs?: number;
}

export async function createExport(o: ExportCreateOptions): Promise<number> {
  const c = o.client;
  const created = await c.POST('/exports', {
    params: { header: { 'Idempotency-Key': idempotencyKey() } },
    body: { resource: 'users', columns: o.columns as any, filters: o.filters as any },
  });
  if (!created.data) fail('create export', created.error, created.response.status);
  const exp = created.data.data;
  o.io.err(`Export ${exp.id} queued.`);
  if (exp.operation_id) await settle(c, exp.operation_id, o.intervalMs ?? 1000);
  return downloadExport(c, exp.id, o.out, o.io);
}

export async function downloadExport(
  c: V3Client,
  id: string,
  out: string | undefined,
  io: Io,
): Promise<number> {
  const got = await c.GET('/exports/{export_id}', { params: { path: { export_id: id } } });
  if (!got.data) fail('export', got.error, got.response.status);
  const exp = got.data.data;
  if (exp.status !== 'completed' || !exp.file_id) {
    const why = exp.failure_reason ? `: ${exp.failure_reason}` : '';
    io.err(`error: export ${id} is ${exp.status}${why}; nothing to download`);
    return 1;
  }
  io.err(`Export ${id}: ${exp.total} rows.`);
  return download(c, exp.file_id, out ?? `export-${id}.csv`, io);
}

/** `--filters '{"access":"accessed","tag_id":["3"]}'` -> the export's filters (the server checks them). */
export function parseFilters(text: string | undefined): Record<string, unknown> {
  if (!text) return {};
  let filters: unknown;
  try {
    filters = JSON.parse(text);
  } catch {
    throw new UsageError(
      `--filters takes a JSON object, as the filters of POST /exports; got ${text}`,
    );
  }
  if (typeof filters !== 'object' || filters === null || Array.isArray(filters))
    throw new UsageError(
      `--filters takes a JSON object, as the filters of POST /exports; got ${text}`,
    );
  return filters as Record<string, unknown>;
}
