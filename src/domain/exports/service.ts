// Exports of users: POST records the export and its operation (`export.users`, one item) in one
// transaction; the item writes the file before its transaction (prepare) and completes the
// export in it. 7 days after completion the export is `expired`: its file id is gone at once
// (by the clock), and the sweep deletes the bytes.
import type { Clock } from '../../clock.ts';
import { DAY } from '../../clock.ts';
import type { Db, Tx } from '../../db/engine.ts';
import { inTransaction, transaction } from '../../db/tx.ts';
import { AppError } from '../../errors.ts';
import type { AuthContext } from '../credentials/auth.ts';
import type { OperationsService } from '../operations/service.ts';
import type { FilesPort } from '../shared/files-port.ts';
import { generate, type GenerateOptions } from './generate.ts';
import { exportsRepo as repo, type Export, type ExportFilters } from './repo.ts';

export const RETENTION_MS = 7 * DAY;
export const EXPORT_USERS = 'export.users';

export interface ExportInput {
  resource: string;
  columns: string[];
  filters?: Partial<ExportFilters>;
}

export class ExportsService {
  /** Users read per page of the snapshot. */
  pageSize = 1000;
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly operations: OperationsService;
  private readonly files: FilesPort;

  constructor(db: Db, clock: Clock, operations: OperationsService, files: FilesPort) {
    this.db = db;
    this.clock = clock;
    this.operations = operations;
    this.files = files;
  }

  /** Nothing by default; a test replaces it to change users while the file is written. */
  async afterPage(_page: number): Promise<void> {}

  /** As shown: a completed export past its retention is expired, file or no sweep yet. */
  private view(e: Export): Export {
    if (e.status === 'completed' && e.expiresAt && e.expiresAt <= this.clock.now().toISOString())
      return { ...e, status: 'expired', fileId: null };
    return e;
  }

  async get(
    accountId: number,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<Export> {
    const e = id === null ? null : await repo.get({ tx }, accountId, id);
    if (!e) throw new AppError('not_found');
    return this.view(e);
  }

  async create(auth: AuthContext, input: ExportInput, opts: { tx?: Tx } = {}): Promise<Export> {
    const f = input.filters ?? {};
    if (f.showcase_id !== undefined)
      throw new AppError('validation_failed', {
        details: [
          {
            field: 'filters.showcase_id',
            code: 'not_applicable',
            message: 'This platform has no showcases.',
            reason: 'not_applicable',
          },
        ],
      });
    const filters: ExportFilters = {
      access: f.access ?? null,
      delivery_id: f.delivery_id ?? null,
      showcase_id: null,
      status: f.status ?? null,
      type: f.type ?? null,
      product_id: f.product_id ?? [],
      tag_id: f.tag_id ?? [],
    };
    return inTransaction(this.db, opts.tx, async (tx) => {
      const id = await repo.insert(
        { tx },
        {
          accountId: auth.account.id,
          resource: input.resource,
          columns: input.columns,
          filters,
          createdAt: this.clock.now().toISOString(),
        },
      );
      const op = await this.operations.open(
        auth,
        EXPORT_USERS,
        [{ key: 'export', payload: { export_id: id } }],
        { tx },
      );
      await repo.setOperation({ tx }, id, op.id);
      return this.get(auth.account.id, id, { tx });
    });
  }

  /**
   * The export.users item, before its transaction (src/batches/export-users.ts): writes the file
   * from the snapshot. Safe to run again: a file written by a run that did not commit stays
   * unreferenced.
   */
  async writeFile(accountId: number, exportId: number) {
    const e = await repo.get({ tx: this.db }, accountId, exportId);
    if (!e) throw new AppError('not_found');
    const options: GenerateOptions = {
      pageSize: this.pageSize,
      afterPage: (page) => this.afterPage(page),
    };
    return generate(this.db, this.clock, this.files, e, options);
  }

  /** The item's transaction: the export is completed, kept RETENTION_MS from now. */
  async recordCompleted(
    { tx }: { tx: Tx },
    exportId: number,
    done: Awaited<ReturnType<typeof generate>>,
  ) {
    const expiresAt = new Date(this.clock.now().getTime() + RETENTION_MS).toISOString();
    await repo.complete({ tx }, exportId, { ...done, expiresAt });
  }

  /** The failing item's transaction: the export is failed, with a reason. */
  async recordFailed({ tx }: { tx: Tx }, exportId: number, err: unknown) {
    const reason =
      err instanceof AppError
        ? err.code
        : 'The file could not be written; resume the operation to try again.';
    await repo.fail({ tx }, exportId, reason);
  }

  /** The sweep: deletes the bytes of exports past their retention, then marks them expired. */
  async expireDue(): Promise<number> {
    let n = 0;
    for (;;) {
      const due = await repo.due({ tx: this.db }, this.clock.now().toISOString(), 100);
      if (due.length === 0) return n;
      for (const e of due) {
        await this.files.remove(e.accountId, e.fileId!).catch((err) => {
          if (!(err instanceof AppError && err.code === 'not_found')) throw err;
        });
        await transaction(this.db, (tx) => repo.expire({ tx }, e.id));
        n++;
      }
    }
  }
}
