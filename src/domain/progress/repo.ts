// Lessons (table `lessons`), the students' progress in them (table `lesson_progress`) and their
// exam results (table `exam_results`). Every function takes the caller's `tx`.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Tx } from '../../db/knex.ts';
import { bool, insertId } from '../../db/dialect.ts';
import { changedRow, newRow, toRow } from '../shared/row.ts';

export type LessonKind = 'lesson' | 'exam';

export interface Lesson {
  id: number;
  accountId: number;
  productId: number;
  moduleId: number | null;
  kind: LessonKind;
  name: string;
  createdAt: string;
  updatedAt: string;
}

export interface LessonProgress {
  lessonId: number;
  percent: number;
  completed: boolean;
  completedAt: string | null;
  updatedAt: string;
}

export interface ExamResult {
  id: number;
  userId: number;
  productId: number;
  itemId: number;
  score: number;
  maxScore: number;
  passed: boolean;
  attempts: number;
  submittedAt: string;
  revision: string;
  createdAt: string;
  updatedAt: string;
}

export type NewLesson = Pick<Lesson, 'accountId' | 'productId' | 'moduleId' | 'kind' | 'name'>;

/** The student's progress in one lesson, as written. */
export interface ProgressFields {
  accountId: number;
  userId: number;
  productId: number;
  lessonId: number;
  percent: number;
  completed: boolean;
  completedAt: string | null;
}

/** A result's written fields; the repository sets its revision and timestamps. */
export type ResultFields = Pick<
  ExamResult,
  'score' | 'maxScore' | 'passed' | 'attempts' | 'submittedAt'
>;
export type NewResult = ResultFields &
  Pick<ExamResult, 'userId' | 'productId' | 'itemId'> & { accountId: number };

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

const mapLesson = (r: any): Lesson => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  productId: Number(r.product_id),
  moduleId: num(r.module_id),
  kind: r.kind,
  name: r.name,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const mapProgress = (r: any): LessonProgress => ({
  lessonId: Number(r.lesson_id),
  percent: Number(r.percent),
  completed: bool(r.completed),
  completedAt: r.completed_at ?? null,
  updatedAt: r.updated_at,
});

const mapResult = (r: any): ExamResult => ({
  id: Number(r.id),
  userId: Number(r.user_id),
  productId: Number(r.product_id),
  itemId: Number(r.lesson_id),
  score: Number(r.score),
  maxScore: Number(r.max_score),
  passed: bool(r.passed),
  attempts: Number(r.attempts),
  submittedAt: r.submitted_at,
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const lessonPages = pages({
  list: 'lessons',
  sorts: { created_at: keyset('lessons.created_at', 'lessons.id').asc },
  map: mapLesson,
});

export const lessonsRepo = {
  map: mapLesson,

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Lesson | null> {
    const r = await tx('lessons').where({ account_id: accountId, id }).first();
    return r ? mapLesson(r) : null;
  },

  /** One page of the product's lessons and exams, oldest first. */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    productId: number,
    f: { kind?: LessonKind },
    p: PageParams,
  ) {
    const query = lessonsRepo.listQuery({ tx }, productId, f.kind);
    return lessonPages(query, cursors, { ...p, of: [accountId, productId], filters: f });
  },

  /** Unordered: paginate adds the keyset condition and ORDER BY (created_at, id). */
  listQuery({ tx }: { tx: Tx }, productId: number, kind: LessonKind | undefined) {
    const q = tx('lessons').where('lessons.product_id', productId);
    if (kind !== undefined) q.where('lessons.kind', kind);
    return q.select('lessons.*');
  },

  /** Every lesson (not exam) of the product, oldest first. */
  async lessonsOf({ tx }: { tx: Tx }, productId: number): Promise<Lesson[]> {
    const rows = await tx('lessons')
      .where({ product_id: productId, kind: 'lesson' })
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
    return rows.map(mapLesson);
  },

  async moduleOf({ tx }: { tx: Tx }, productId: number, moduleId: number): Promise<boolean> {
    return Boolean(await tx('modules').where({ product_id: productId, id: moduleId }).first('id'));
  },

  async insert({ tx }: { tx: Tx }, l: NewLesson, now: string): Promise<number> {
    return insertId({ tx }, 'lessons', { ...toRow(l), created_at: now, updated_at: now });
  },
};

export const progressRepo = {
  async ofProduct(
    { tx }: { tx: Tx },
    userId: number,
    productId: number,
  ): Promise<LessonProgress[]> {
    const rows = await tx('lesson_progress').where({ user_id: userId, product_id: productId });
    return rows.map(mapProgress);
  },

  async get({ tx }: { tx: Tx }, userId: number, lessonId: number): Promise<LessonProgress | null> {
    const r = await tx('lesson_progress').where({ user_id: userId, lesson_id: lessonId }).first();
    return r ? mapProgress(r) : null;
  },

  /** Inserts or replaces the student's progress in one lesson. */
  async put({ tx }: { tx: Tx }, p: ProgressFields, now: string): Promise<void> {
    const changes = { ...toRow(p), updated_at: now };
    await tx('lesson_progress')
      .insert({ ...changes, created_at: now })
      .onConflict(['user_id', 'lesson_id'])
      .merge(Object.keys(changes));
  },
};

export const resultsRepo = {
  async get({ tx }: { tx: Tx }, userId: number, itemId: number): Promise<ExamResult | null> {
    const r = await tx('exam_results').where({ user_id: userId, lesson_id: itemId }).first();
    return r ? mapResult(r) : null;
  },

  async insert({ tx }: { tx: Tx }, r: NewResult, now: string): Promise<number> {
    const { itemId, ...rest } = r;
    return insertId({ tx }, 'exam_results', newRow({ ...rest, lessonId: itemId }, now));
  },

  /** A new revision; with `revision`, only that revision is overwritten. Returns rows hit. */
  async update(
    { tx }: { tx: Tx },
    id: number,
    changes: ResultFields,
    now: string,
    revision?: string,
  ): Promise<number> {
    const q = tx('exam_results').where('id', id);
    if (revision !== undefined) q.where('revision', revision);
    return q.update(changedRow(changes, now));
  },
};
