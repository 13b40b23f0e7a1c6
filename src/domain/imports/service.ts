// Imports of students' access (`students_access`): create (pending, no row read), change the
// mapping or duplicate policy, analyse (an operation that classifies every CSV record), then
// processing attempts (operations that apply the ready rows not applied yet, one item per row).
// The stored status is pending, analyzed or failed; `analyzing` and `processing` are read from
// the current operation and `processed` from the counters, so a canceled or crashed operation
// never leaves an import stuck in a state nobody will leave.
import type { Clock } from '../../clock.ts';
import type { Db, Tx } from '../../db/engine.ts';
import { inTransaction } from '../../db/tx.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { PageResult } from '../../db/page.ts';
import { AppError } from '../../errors.ts';
import type { AuthContext } from '../credentials/auth.ts';
import { assertFeature } from '../accounts/features.ts';
import { fromId, newRevision } from '../shared/ids.ts';
import { guardedWrite } from '../shared/revision.ts';
import { rejection } from '../shared/rejections.ts';
import type { FilesPort } from '../shared/files-port.ts';
import type { OperationsService } from '../operations/service.ts';
import { operationsRepo, TERMINAL, type Operation } from '../operations/repo.ts';
import {
  importsRepo as repo,
  type Attempt,
  type DuplicatePolicy,
  type Import,
  type ImportRow,
  type Mapping,
  type RowStatus,
} from './repo.ts';

export const ANALYSIS = 'import.analysis';
export const PROCESS = 'import.process';
export const DEFAULT_MAPPING: Mapping = {
  email: 'email',
  product_external_id: 'product_external_id',
  status: 'status',
};

export type ImportStatus =
  'pending' | 'analyzing' | 'analyzed' | 'processing' | 'processed' | 'failed';

export interface ImportView extends Import {
  shownStatus: ImportStatus;
}

export interface AttemptView extends Attempt {
  operation: Operation | null;
}

const conflict = (reason: string, message: string) => rejection('state_conflict', reason, message);
const running = (op: Operation | null) =>
  op !== null && !(TERMINAL as readonly string[]).includes(op.status);

export class ImportsService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  private readonly operations: OperationsService;
  private readonly files: FilesPort;
  constructor(
    db: Db,
    clock: Clock,
    cursors: CursorCodec,
    operations: OperationsService,
    files: FilesPort,
  ) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.operations = operations;
    this.files = files;
  }

  private now = () => this.clock.now().toISOString();

  private async load({ tx }: { tx: Tx }, accountId: number, id: number | null) {
    const imp = id === null ? null : await repo.get({ tx }, accountId, id);
    if (!imp) throw new AppError('not_found');
    const op =
      imp.currentOperationId === null
        ? null
        : await operationsRepo.get({ tx }, imp.currentOperationId);
    return { imp, op };
  }

  private view(imp: Import, op: Operation | null): ImportView {
    let shownStatus: ImportStatus = imp.status;
    if (running(op)) shownStatus = op!.type === ANALYSIS ? 'analyzing' : 'processing';
    else if (imp.status === 'analyzed' && imp.rows.ready > 0 && imp.rowsApplied >= imp.rows.ready)
      shownStatus = 'processed';
    return { ...imp, shownStatus };
  }

  async get(
    accountId: number,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<ImportView> {
    const { imp, op } = await this.load({ tx }, accountId, id);
    return this.view(imp, op);
  }

  async create(
    auth: AuthContext,
    input: {
      file_id: string;
      type: string;
      mapping?: Partial<Mapping>;
      duplicate_policy?: DuplicatePolicy;
    },
    opts: { tx?: Tx } = {},
  ): Promise<ImportView> {
    const accountId = auth.account.id;
    return inTransaction(this.db, opts.tx, async (tx) => {
      await assertFeature({ tx }, accountId, 'imports');
      if (input.type !== 'students_access')
        throw fieldError('type', 'The only import type is students_access.');
      const fileId = fromId(input.file_id);
      const file =
        fileId === null
          ? null
          : await this.files.get(accountId, fileId, { tx }).catch((err) => {
              if (err instanceof AppError && err.code === 'not_found') return null;
              throw err;
            });
      if (!file) throw fieldError('file_id', 'No file of this account has this id.', 'not_found');
      if (file.purpose !== 'import')
        throw fieldError(
          'file_id',
          'The file was not uploaded with purpose import.',
          'wrong_purpose',
        );
      const id = await repo.insert(
        { tx },
        {
          accountId,
          fileId: file.id,
          type: input.type,
          duplicatePolicy: input.duplicate_policy ?? 'skip',
          mapping: { ...DEFAULT_MAPPING, ...input.mapping },
          revision: newRevision(),
        },
        this.now(),
      );
      return this.get(accountId, id, { tx });
    });
  }

  /** Allowed until a row is applied; a change sends an analysed import back to pending. */
  async update(
    accountId: number,
    id: number | null,
    input: { mapping?: Partial<Mapping>; duplicate_policy?: DuplicatePolicy },
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<ImportView> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      let mapping: Mapping | undefined;
      let policy: DuplicatePolicy | undefined;
      const imp = await guardedWrite({
        load: () => this.load({ tx }, accountId, id).then(({ imp, op }) => ({ ...imp, op })),
        ifMatch,
        check: (row) => {
          this.assertIdle(row, row.op);
          if (row.rowsApplied > 0)
            throw conflict('import_processed', 'Rows of this import were processed already.');
          mapping = { ...row.mapping, ...input.mapping };
          policy = input.duplicate_policy ?? row.duplicatePolicy;
        },
        write: async (row, guard) => {
          const same =
            JSON.stringify(mapping) === JSON.stringify(row.mapping) &&
            policy === row.duplicatePolicy;
          if (same) return 1;
          await repo.deleteRows({ tx }, row.id);
          const changes = {
            mapping,
            duplicatePolicy: policy,
            status: 'pending' as const,
            rows: { total: 0, ready: 0, notReady: 0, ignored: 0 },
            failureReason: null,
            revision: newRevision(),
            updatedAt: this.now(),
          };
          return repo.update({ tx }, row.id, changes, guard);
        },
      });
      return this.get(accountId, imp.id, { tx });
    });
  }

  async remove(
    accountId: number,
    id: number | null,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      await guardedWrite({
        load: () => this.load({ tx }, accountId, id).then(({ imp, op }) => ({ ...imp, op })),
        ifMatch,
        check: (row) => {
          if (!row.deleted && running(row.op))
            throw conflict('import_busy', 'An analysis or processing attempt runs.');
        },
        write: (row, guard) =>
          row.deleted
            ? Promise.resolve(1)
            : repo.update(
                { tx },
                row.id,
                { deleted: true, revision: newRevision(), updatedAt: this.now() },
                guard,
              ),
      });
    });
  }

  private assertIdle(imp: Import, op: Operation | null) {
    if (imp.deleted) throw conflict('import_deleted', 'The import is in the trash.');
    if (running(op)) throw conflict('import_busy', 'An analysis or processing attempt runs.');
  }

  async requestAnalysis(auth: AuthContext, id: number | null, opts: { tx?: Tx } = {}) {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const { imp, op } = await this.load({ tx }, auth.account.id, id);
      await assertFeature({ tx }, imp.accountId, 'imports');
      this.assertIdle(imp, op);
      if (imp.rowsApplied > 0)
        throw conflict('import_processed', 'Rows of this import were processed already.');
      const analysis = await this.operations.open(
        auth,
        ANALYSIS,
        [{ key: 'analysis', payload: { import_id: imp.id } }],
        { tx },
      );
      await repo.update({ tx }, imp.id, {
        status: 'pending',
        rows: { total: 0, ready: 0, notReady: 0, ignored: 0 },
        failureReason: null,
        currentOperationId: analysis.id,
        revision: newRevision(),
        updatedAt: this.now(),
      });
      return analysis;
    });
  }

  async rows(
    accountId: number,
    id: number | null,
    q: { status?: RowStatus; limit?: number; cursor?: string },
  ): Promise<PageResult<ImportRow>> {
    const imp = await this.get(accountId, id);
    return repo.rowsPage({ tx: this.db }, this.cursors, imp.id, q);
  }

  /** A processing attempt: an operation over the ready rows no attempt has applied yet. */
  async createAttempt(auth: AuthContext, id: number | null, opts: { tx?: Tx } = {}) {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const { imp, op } = await this.load({ tx }, auth.account.id, id);
      await assertFeature({ tx }, imp.accountId, 'imports');
      this.assertIdle(imp, op);
      if (imp.status !== 'analyzed')
        throw conflict(
          'analysis_required',
          'Analyse the import first; its analysis has not finished.',
        );
      const earlier = await repo.attempts({ tx }, imp.id);
      const attemptId = await repo.insertAttempt(
        { tx },
        {
          importId: imp.id,
          operationId: null,
          credentialId: auth.credential.id,
          mode: earlier.length ? 'remaining' : 'initial',
          rows: 0,
          createdAt: this.now(),
        },
      );
      const processing = await this.operations.openWith(
        auth,
        PROCESS,
        (t, opId, now) => repo.fillItems({ tx: t }, imp.id, attemptId, opId, now),
        { tx },
      );
      if (processing.total === 0)
        throw conflict('nothing_to_process', 'Every ready row has been applied already.');
      await repo.setAttempt({ tx }, attemptId, {
        operationId: processing.id,
        rows: processing.total,
      });
      await repo.update({ tx }, imp.id, {
        currentOperationId: processing.id,
        revision: newRevision(),
        updatedAt: this.now(),
      });
      return (await this.attemptViews({ tx }, imp.id, attemptId))[0]!;
    });
  }

  async attempts(accountId: number, id: number | null): Promise<AttemptView[]> {
    const imp = await this.get(accountId, id);
    return this.attemptViews({ tx: this.db }, imp.id);
  }

  private async attemptViews(
    { tx }: { tx: Tx },
    importId: number,
    id?: number,
  ): Promise<AttemptView[]> {
    const out: AttemptView[] = [];
    for (const a of await repo.attempts({ tx }, importId, id))
      out.push({
        ...a,
        operation: a.operationId === null ? null : await operationsRepo.get({ tx }, a.operationId),
      });
    return out;
  }
}

function fieldError(field: string, message: string, reason = 'invalid') {
  return new AppError('validation_failed', {
    details: [{ field, code: reason, message, reason }],
  });
}
