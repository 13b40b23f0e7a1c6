// The analysis of an import: the CSV is streamed through csv-parse (never whole in memory), each
// record classified and written to import_rows in chunks, each chunk its own transaction so the
// writer is never held for the whole file. It starts by deleting the rows of any earlier run, so
// running it again (after a crash, or a new mapping) gives the same rows.
import { parse } from 'csv-parse';
import type { Readable } from 'node:stream';
import type { Db, Tx } from '../../db/engine.ts';
import { transaction } from '../../db/tx.ts';
import { importsRepo as repo, type Import, type NewRow } from './repo.ts';
import { deliveryIdByExternalId } from './deliveries.ts';
import { withoutNul } from '../shared/text.ts';

/** Rows per transaction: few commits, and the writer is free between them. */
const CHUNK = 1000;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const ACCESS_STATUSES: Record<string, 'active' | 'inactive'> = {
  '': 'active',
  active: 'active',
  inactive: 'inactive',
};

/** The file cannot be analysed as a whole (not CSV, a mapped column missing). */
export class UnreadableFile extends Error {}

export async function analyse(db: Db, imp: Import, body: Readable): Promise<Import['rows']> {
  await transaction(db, (tx) => repo.deleteRows({ tx }, imp.id));
  const parser = body.pipe(
    parse({
      bom: true,
      columns: (header: string[]) => {
        const names = header.map((h) => h.trim());
        for (const [field, column] of Object.entries(imp.mapping))
          if (!names.includes(column))
            throw new UnreadableFile(`The file has no column "${column}" (mapped to ${field}).`);
        return names;
      },
      skip_empty_lines: true,
      trim: true,
      relax_column_count: true,
      // A cell's NUL would fail the chunk's insert on PostgreSQL (the whole analysis with it).
      cast: (value: string) => withoutNul(value),
    }),
  );
  // A failing source (the store) fails the parser too, instead of leaving it waiting.
  body.on('error', (err) => parser.destroy(err));
  const products = new Map<string, number | null>();
  let chunk: NewRow[] = [];
  let row = 0;
  const flush = async () => {
    const rows = chunk;
    chunk = [];
    if (rows.length) await transaction(db, (tx) => repo.insertRows({ tx }, imp.id, rows));
  };
  try {
    for await (const record of parser as AsyncIterable<Record<string, string>>) {
      row++;
      chunk.push(await classify({ tx: db }, imp, row, record, products));
      if (chunk.length >= CHUNK) await flush();
    }
  } catch (err) {
    if (err instanceof UnreadableFile) throw err;
    const code = (err as { code?: string }).code;
    if (code?.startsWith('CSV_'))
      throw new UnreadableFile(`Not a valid CSV file: ${String((err as Error).message)}`);
    throw err;
  }
  await flush();
  if (row === 0) throw new UnreadableFile('The file has a header but no rows.');
  return transaction(db, async (tx) => {
    await repo.markDuplicates({ tx }, imp.id, imp.duplicatePolicy);
    return repo.countRows({ tx }, imp.id);
  });
}

async function classify(
  { tx }: { tx: Tx },
  imp: Import,
  row: number,
  record: Record<string, string>,
  products: Map<string, number | null>,
): Promise<NewRow> {
  const email = (record[imp.mapping.email] ?? '').slice(0, 320) || null;
  const external = (record[imp.mapping.product_external_id] ?? '').slice(0, 200) || null;
  const access = (record[imp.mapping.status] ?? '').toLowerCase();
  const out = (
    status: NewRow['status'],
    reason: string | null,
    dedupeKey: string | null = null,
  ) => ({
    row,
    status,
    reason,
    email,
    productExternalId: external,
    accessStatus: ACCESS_STATUSES[access] ?? null,
    dedupeKey,
  });
  if (!email) return out('not_ready', 'email_missing');
  if (!EMAIL.test(email)) return out('not_ready', 'email_invalid');
  if (!external) return out('not_ready', 'product_external_id_missing');
  if (!(access in ACCESS_STATUSES)) return out('not_ready', 'status_invalid');
  if (!products.has(external))
    products.set(external, await deliveryIdByExternalId({ tx }, imp.accountId, external));
  const deliveryId = products.get(external);
  if (deliveryId === null || deliveryId === undefined) return out('not_ready', 'product_unknown');
  return out('ready', null, `${email.toLowerCase()} ${deliveryId}`);
}
