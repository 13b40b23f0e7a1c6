// Imports and exports in tests: files of purpose `import` put straight into the store (as an
// upload would leave them), a delivery to import against, and waiting for an import's operation.
import * as assert from 'uvu/assert';
import { filesRepo } from '../../src/domain/files/repo.ts';
import { newStorageKey } from '../../src/domain/files/service.ts';
import { transaction } from '../../src/db/tx.ts';
import { newKey, type Booted } from './app.ts';
import { product } from './catalog.ts';
import { delivery } from './sales.ts';
import { readAll } from './files.ts';
import { waitFor } from './operations.ts';

export const I = '/api/v3/imports';

/** A stored file of this purpose holding `text`; returns its id as v3 shows it. */
export async function storedFile(b: Booted, text: string, purpose: 'import' | 'export' = 'import') {
  const files = b.app.services.files;
  const key = newStorageKey(b.accountId);
  const bytes = Buffer.from(text);
  await files.storage.put(
    key,
    (async function* () {
      yield new Uint8Array(bytes);
    })(),
  );
  const id = await transaction(b.app.db, (tx) =>
    filesRepo.insert(
      { tx },
      {
        accountId: b.accountId,
        purpose,
        filename: 'students.csv',
        contentType: 'text/csv',
        size: bytes.length,
        sha256: '0'.repeat(64),
        createdAt: new Date().toISOString(),
        storageKey: key,
      },
    ),
  );
  return String(id);
}

/** The text of a stored file. */
export async function fileText(b: Booted, id: string): Promise<string> {
  return (await readAll(await b.app.services.files.openRead(b.accountId, Number(id)))).toString();
}

/** A product and an active delivery that grants it for 30 days, listening to `externalId`. */
export async function catalog(b: Booted, externalId = 'EXT-1') {
  const p = await product(b, { name: `Course ${externalId}` });
  const d = await delivery(b, {
    name: `Delivery ${externalId}`,
    external_ids: [externalId],
    products: [{ product_id: p.id }],
    duration: 30,
    duration_unit: 'day',
  });
  return { product: p, delivery: d };
}

export async function createImport(b: Booted, csv: string, body: Record<string, unknown> = {}) {
  const fileId = await storedFile(b, csv);
  const res = await b.api('POST', I, {
    body: { file_id: fileId, type: 'students_access', ...body },
    key: newKey(),
  });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

/** Requests an analysis and waits for its operation; returns the operation. */
export async function analyse(b: Booted, importId: string) {
  const res = await b.api('POST', `${I}/${importId}/analyses`, { key: newKey() });
  assert.is(res.status, 202, JSON.stringify(res.body));
  return waitFor(b, res.body.data.id);
}

/** Starts a processing attempt and waits for its operation; returns [attempt, operation]. */
export async function processImport(b: Booted, importId: string) {
  const res = await b.api('POST', `${I}/${importId}/processing-attempts`, { key: newKey() });
  assert.is(res.status, 202, JSON.stringify(res.body));
  assert.is(res.headers.get('location'), `/api/v3/operations/${res.body.data.operation_id}`);
  return [res.body.data, await waitFor(b, res.body.data.operation_id)] as const;
}
