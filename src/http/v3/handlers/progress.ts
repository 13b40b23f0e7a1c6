// Lessons of a product, students' progress in them and results in exam items.
import type { components } from '../../../../generated/types.ts';
import type { ProductProgress, ProgressService } from '../../../domain/progress/service.ts';
import type { ExamResult, Lesson } from '../../../domain/progress/repo.ts';
import { fromId, toId } from '../../../domain/shared/ids.ts';
import { etag } from '../../../domain/shared/revision.ts';
import type { Handlers } from './types.ts';

type Schemas = components['schemas'];
type ProgressOps =
  | 'listLessons'
  | 'createLesson'
  | 'getProductProgress'
  | 'putLessonProgress'
  | 'getExamResult'
  | 'putExamResult';

export const presentLesson = (l: Lesson): Schemas['Lesson'] => ({
  object: 'lesson',
  id: String(l.id),
  product_id: String(l.productId),
  module_id: toId(l.moduleId),
  kind: l.kind,
  name: l.name,
  created_at: l.createdAt,
  updated_at: l.updatedAt,
});

export const presentLessonProgress = (
  l: ProductProgress['lessons'][number],
): Schemas['LessonProgress'] => ({
  object: 'lesson_progress',
  lesson_id: String(l.lessonId),
  name: l.name,
  percent: l.percent,
  watched: l.watched,
  completed: l.completed,
  completed_at: l.completedAt,
  updated_at: l.updatedAt,
});

export const presentProgress = (p: ProductProgress): Schemas['ProductProgress'] => ({
  object: 'product_progress',
  user_id: String(p.userId),
  product_id: String(p.productId),
  lessons_total: p.total,
  lessons_watched: p.watched,
  lessons_completed: p.completed,
  percent: p.percent,
  lessons: p.lessons.map(presentLessonProgress),
});

export const presentExamResult = (r: ExamResult): Schemas['ExamResult'] => ({
  object: 'exam_result',
  id: String(r.id),
  user_id: String(r.userId),
  item_id: String(r.itemId),
  product_id: String(r.productId),
  score: r.score,
  max_score: r.maxScore,
  passed: r.passed,
  attempts: r.attempts,
  submitted_at: r.submittedAt,
  revision: r.revision,
  created_at: r.createdAt,
  updated_at: r.updatedAt,
});

export function progressHandlers(progress: ProgressService): Pick<Handlers, ProgressOps> {
  return {
    async listLessons({ auth, params, query }) {
      const productId = fromId(params.product_id);
      const { rows, page } = await progress.listLessons(auth.account.id, productId, query);
      return { status: 200, body: { data: rows.map(presentLesson), page } };
    },
    async createLesson({ auth, params, body, tx }) {
      const productId = fromId(params.product_id);
      const l = await progress.createLesson(auth.account.id, productId, body, { tx });
      return { status: 201, body: { data: presentLesson(l) } };
    },
    async getProductProgress({ auth, params }) {
      const p = await progress.productProgress(
        auth.account.id,
        fromId(params.user_id),
        fromId(params.product_id),
      );
      return { status: 200, body: { data: presentProgress(p) } };
    },
    async putLessonProgress({ auth, params, body, tx }) {
      const ids = {
        userId: fromId(params.user_id),
        productId: fromId(params.product_id),
        lessonId: fromId(params.lesson_id),
      };
      const l = await progress.recordLesson(auth.account.id, ids, body, { tx });
      return { status: 200, body: { data: presentLessonProgress(l) } };
    },
    async getExamResult({ auth, params }) {
      const r = await progress.getExamResult(
        auth.account.id,
        fromId(params.user_id),
        fromId(params.item_id),
      );
      return {
        status: 200,
        body: { data: presentExamResult(r) },
        headers: { ETag: etag(r.revision) },
      };
    },
    async putExamResult({ auth, params, body, ifMatch, tx }) {
      const ids = { userId: fromId(params.user_id), itemId: fromId(params.item_id) };
      const { result, created } = await progress.putExamResult(
        auth.account.id,
        ids,
        body,
        ifMatch,
        {
          tx,
        },
      );
      const out = {
        body: { data: presentExamResult(result) },
        headers: { ETag: etag(result.revision) },
      };
      return created ? { status: 201, ...out } : { status: 200, ...out };
    },
  };
}
