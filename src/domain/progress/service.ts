// Lessons of a product, the students' progress in them, and their exam results. A lesson (kind
// `lesson`) counts towards a product's progress; an exam item (kind `exam`) holds results. Takes
// an account id so the legacy v1 routes (progresso_por_produto, resultado_prova) share the use
// cases. Progress is recorded whether or not the student is enrolled: an import may bring the
// history of a past enrollment.
import { inTransaction } from '../../db/tx.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { isUniqueViolation } from '../../db/dialect.ts';
import type { PageResult } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { AppError } from '../../errors.ts';
import { fromId } from '../shared/ids.ts';
import { assertRevision } from '../shared/revision.ts';
import { usersRepo, type User } from '../users/repo.ts';
import { productsRepo } from '../catalog/repo.ts';
import { replicaReadonly } from '../catalog/errors.ts';
import type { Product } from '../catalog/types.ts';
import { fieldError, rejection } from '../shared/rejections.ts';
import {
  lessonsRepo,
  progressRepo,
  resultsRepo,
  type ExamResult,
  type Lesson,
  type LessonKind,
  type LessonProgress,
  type ResultFields,
} from './repo.ts';

export interface LessonInput {
  name: string;
  kind?: LessonKind;
  module_id?: string | null;
}

export interface ProductProgress {
  userId: number;
  productId: number;
  total: number;
  watched: number;
  completed: number;
  /** Completed lessons over all lessons, rounded down; 0 for a product without lessons. */
  percent: number;
  lessons: (LessonProgress & { name: string; watched: boolean })[];
}

export interface ExamResultInput {
  score: number;
  max_score?: number;
  passed: boolean;
  attempts?: number;
  submitted_at?: string;
}

export class ProgressService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  constructor(db: Db, clock: Clock, cursors: CursorCodec) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
  }

  private now = () => this.clock.now().toISOString();

  private async user({ tx }: { tx: Tx }, accountId: number, id: number | null): Promise<User> {
    const u = id === null ? null : await usersRepo.get({ tx }, accountId, id);
    if (!u) throw new AppError('not_found');
    return u;
  }

  private async product(
    { tx }: { tx: Tx },
    accountId: number,
    id: number | null,
  ): Promise<Product> {
    const p = id === null ? null : await productsRepo.get({ tx }, accountId, id);
    if (!p) throw new AppError('not_found');
    return p;
  }

  /** A lesson or exam item of the account of this kind (404 otherwise). */
  private async item({ tx }: { tx: Tx }, accountId: number, id: number | null, kind: LessonKind) {
    const l = id === null ? null : await lessonsRepo.get({ tx }, accountId, id);
    if (!l || l.kind !== kind) throw new AppError('not_found');
    return l;
  }

  async listLessons(
    accountId: number,
    productId: number | null,
    q: { kind?: LessonKind; limit?: number; cursor?: string },
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<PageResult<Lesson>> {
    const p = await this.product({ tx }, accountId, productId);
    return lessonsRepo.page({ tx }, this.cursors, accountId, p.id, { kind: q.kind }, q);
  }

  /** A lesson or exam item of a product (a replicated product's copy is read-only: 403). */
  async createLesson(
    accountId: number,
    productId: number | null,
    input: LessonInput,
    opts: { tx?: Tx } = {},
  ): Promise<Lesson> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const p = await this.product({ tx }, accountId, productId);
      if (p.sourceId !== null) throw replicaReadonly();
      let moduleId: number | null = null;
      if (input.module_id !== undefined && input.module_id !== null) {
        moduleId = fromId(input.module_id);
        if (moduleId === null || !(await lessonsRepo.moduleOf({ tx }, p.id, moduleId)))
          throw fieldError('module_id', 'not_found', 'No module of this product has this id.');
      }
      const id = await lessonsRepo.insert(
        { tx },
        {
          accountId,
          productId: p.id,
          moduleId,
          kind: input.kind ?? 'lesson',
          name: input.name.trim(),
        },
        this.now(),
      );
      return (await lessonsRepo.get({ tx }, accountId, id))!;
    });
  }

  /**
   * Replaces the student's progress in a lesson of the product: `percent` watched (0-100) and
   * `completed` (default: percent is 100). `completed_at` keeps the first completion.
   */
  async recordLesson(
    accountId: number,
    ids: { userId: number | null; productId: number | null; lessonId: number | null },
    input: { percent: number; completed?: boolean },
    opts: { tx?: Tx } = {},
  ): Promise<ProductProgress['lessons'][number]> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const u = await this.user({ tx }, accountId, ids.userId);
      const p = await this.product({ tx }, accountId, ids.productId);
      const l = await this.item({ tx }, accountId, ids.lessonId, 'lesson');
      if (l.productId !== p.id) throw new AppError('not_found');
      const before = await progressRepo.get({ tx }, u.id, l.id);
      const now = this.now();
      const completed = input.completed ?? input.percent === 100;
      await progressRepo.put(
        { tx },
        {
          accountId,
          userId: u.id,
          productId: p.id,
          lessonId: l.id,
          percent: input.percent,
          completed,
          completedAt: completed ? (before?.completedAt ?? now) : null,
        },
        now,
      );
      const after = (await progressRepo.get({ tx }, u.id, l.id))!;
      return { ...after, name: l.name, watched: watched(after) };
    });
  }

  /** Every lesson of the product with the student's progress (none yet: 0 and false). */
  async productProgress(
    accountId: number,
    userId: number | null,
    productId: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<ProductProgress> {
    const u = await this.user({ tx }, accountId, userId);
    const p = await this.product({ tx }, accountId, productId);
    const lessons = await lessonsRepo.lessonsOf({ tx }, p.id);
    const rows = new Map(
      (await progressRepo.ofProduct({ tx }, u.id, p.id)).map((r) => [r.lessonId, r]),
    );
    const list = lessons.map((l) => {
      const r = rows.get(l.id) ?? {
        lessonId: l.id,
        percent: 0,
        completed: false,
        completedAt: null,
        updatedAt: l.createdAt,
      };
      return { ...r, name: l.name, watched: watched(r) };
    });
    const completed = list.filter((l) => l.completed).length;
    return {
      userId: u.id,
      productId: p.id,
      total: list.length,
      watched: list.filter((l) => l.watched).length,
      completed,
      percent: list.length ? Math.floor((completed * 100) / list.length) : 0,
      lessons: list,
    };
  }

  async getExamResult(
    accountId: number,
    userId: number | null,
    itemId: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<ExamResult> {
    const u = await this.user({ tx }, accountId, userId);
    const item = await this.item({ tx }, accountId, itemId, 'exam');
    const r = await resultsRepo.get({ tx }, u.id, item.id);
    if (!r) throw new AppError('not_found');
    return r;
  }

  /** Replaces the student's result in an exam item (If-Match guards an existing one). */
  async putExamResult(
    accountId: number,
    ids: { userId: number | null; itemId: number | null },
    input: ExamResultInput,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<{ result: ExamResult; created: boolean }> {
    const maxScore = input.max_score ?? 100;
    if (input.score > maxScore)
      throw fieldError('score', 'too_large', `Must be at most max_score (${maxScore}).`);
    const submittedAt =
      input.submitted_at === undefined ? undefined : Date.parse(input.submitted_at);
    if (Number.isNaN(submittedAt))
      throw fieldError('submitted_at', 'invalid_format', 'Must be a date-time.');
    return inTransaction(this.db, opts.tx, async (tx) => {
      const u = await this.user({ tx }, accountId, ids.userId);
      const item = await this.item({ tx }, accountId, ids.itemId, 'exam');
      const before = await resultsRepo.get({ tx }, u.id, item.id);
      if (before) assertRevision(ifMatch, before.revision);
      // RFC 9110: If-Match (even `*`) fails when there is no current representation.
      else if (ifMatch !== undefined) throw new AppError('revision_mismatch');
      const now = this.now();
      const fields: ResultFields = {
        score: input.score,
        maxScore,
        passed: input.passed,
        attempts: input.attempts ?? 1,
        submittedAt: submittedAt === undefined ? now : new Date(submittedAt).toISOString(),
      };
      if (before) {
        const guard = ifMatch === undefined ? undefined : before.revision;
        if ((await resultsRepo.update({ tx }, before.id, fields, now, guard)) === 0)
          throw new AppError('revision_mismatch');
      } else {
        try {
          await resultsRepo.insert(
            { tx },
            { ...fields, accountId, userId: u.id, productId: item.productId, itemId: item.id },
            now,
          );
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
          throw rejection('state_conflict', 'concurrent_write', 'Written meanwhile: retry.');
        }
      }
      return { result: (await resultsRepo.get({ tx }, u.id, item.id))!, created: !before };
    });
  }
}

/** A lesson is watched once any of it was, or once it is completed. */
const watched = (r: LessonProgress) => r.percent > 0 || r.completed;
