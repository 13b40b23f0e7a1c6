// Lessons, progress and exam results through HTTP: lessons and exam items of a product, a
// student's progress per lesson and per product (totals and percent), results with ETags, the
// 404s of the wrong kind or product, replicas, permissions.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { P, account, all, mod, product } from '../helpers/catalog.ts';
import { student } from '../helpers/sales.ts';

const t = suite<{ b: Booted }>('v3 enrollments: lessons, progress, exam results');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const lesson = async (b: Booted, productId: string, body: Record<string, unknown>) => {
  const res = await b.api('POST', `${P}/${productId}/lessons`, { body, key: newKey() });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
};
const progressOf = (b: Booted, userId: string, productId: string) =>
  `/api/v3/users/${userId}/progress/${productId}`;

t('lessons and exam items of a product', async ({ b }) => {
  const p = await product(b, { name: 'Statistics' });
  const m = await mod(b, p.id, { name: 'Week 1', kind: 'module' });
  const l1 = await lesson(b, p.id, { name: ' Mean ', module_id: m.id });
  assert.equal(l1, {
    object: 'lesson',
    id: l1.id,
    product_id: p.id,
    module_id: m.id,
    kind: 'lesson',
    name: 'Mean',
    created_at: l1.created_at,
    updated_at: l1.created_at,
  });
  const exam = await lesson(b, p.id, { name: 'Quiz', kind: 'exam' });
  assert.equal([exam.kind, exam.module_id], ['exam', null]);
  const names = async (q: string) =>
    (await all(b, `${P}/${p.id}/lessons?limit=1${q}`)).map((l: any) => l.name);
  assert.equal(await names(''), ['Mean', 'Quiz']);
  assert.equal(await names('&kind=exam'), ['Quiz']);
  const other = await product(b, { name: 'Other' });
  const otherModule = await mod(b, other.id, { name: 'Elsewhere', kind: 'module' });
  const wrong = await b.api('POST', `${P}/${p.id}/lessons`, {
    body: { name: 'X', module_id: otherModule.id },
    key: newKey(),
  });
  assert.equal([wrong.status, wrong.body.error.details[0].field], [422, 'module_id']);
  const missing = await b.api('POST', `${P}/999999/lessons`, {
    body: { name: 'X' },
    key: newKey(),
  });
  assert.is(missing.status, 404);
  assert.is((await b.api('GET', `${P}/999999/lessons`)).status, 404);
  // A replica's copy of a product takes no lessons of its own.
  const replica = await account(b, 'Replica', b.accountId);
  await product(b, { name: 'Replicated' });
  const [copy] = (await b.api('GET', P, { secret: replica.secret })).body.data;
  assert.is(copy.name, 'Replicated');
  const refused = await b.api('POST', `${P}/${copy.id}/lessons`, {
    body: { name: 'Mine' },
    key: newKey(),
    secret: replica.secret,
  });
  assert.equal([refused.status, refused.body.error.code], [403, 'replica_readonly']);
});

t('progress per lesson and per product', async ({ b }) => {
  const u = await student(b, 'p1@example.com');
  const p = await product(b, { name: 'Algebra' });
  const a = await lesson(b, p.id, { name: 'A' });
  const c = await lesson(b, p.id, { name: 'C' });
  const d = await lesson(b, p.id, { name: 'D' });
  const exam = await lesson(b, p.id, { name: 'Final', kind: 'exam' });
  const empty = (await b.api('GET', progressOf(b, u.id, p.id))).body.data;
  assert.equal(
    [empty.lessons_total, empty.lessons_watched, empty.lessons_completed, empty.percent],
    [3, 0, 0, 0],
  );
  assert.equal(empty.lessons[0], {
    object: 'lesson_progress',
    lesson_id: a.id,
    name: 'A',
    percent: 0,
    watched: false,
    completed: false,
    completed_at: null,
    updated_at: a.created_at,
  });
  const put = (id: string, body: Record<string, unknown>) =>
    b.api('PUT', `${progressOf(b, u.id, p.id)}/lessons/${id}`, { body });
  const done = await put(a.id, { percent: 100 });
  assert.is(done.status, 200);
  assert.equal([done.body.data.completed, done.body.data.watched], [true, true]);
  const completedAt = done.body.data.completed_at;
  assert.ok(completedAt);
  b.clock.advance(60_000);
  // Watching it again keeps the first completion.
  const rewatch = await put(a.id, { percent: 100 });
  assert.is(rewatch.body.data.completed_at, completedAt);
  await put(c.id, { percent: 40 });
  await put(d.id, { percent: 10, completed: true });
  const now = (await b.api('GET', progressOf(b, u.id, p.id))).body.data;
  assert.equal(
    [now.lessons_total, now.lessons_watched, now.lessons_completed, now.percent],
    [3, 3, 2, 66],
  );
  assert.equal(
    now.lessons.map((l: any) => [l.name, l.percent, l.completed]),
    [
      ['A', 100, true],
      ['C', 40, false],
      ['D', 10, true],
    ],
  );
  // Un-completing clears completed_at.
  const undone = await put(d.id, { percent: 10, completed: false });
  assert.equal([undone.body.data.completed, undone.body.data.completed_at], [false, null]);
  assert.is((await put(exam.id, { percent: 10 })).status, 404);
  const other = await product(b, { name: 'Geometry' });
  assert.is(
    (
      await b.api('PUT', `${progressOf(b, u.id, other.id)}/lessons/${a.id}`, {
        body: { percent: 1 },
      })
    ).status,
    404,
  );
  assert.is((await put(a.id, { percent: 101 })).status, 422);
  assert.is((await b.api('GET', progressOf(b, '999999', p.id))).status, 404);
  const reader = await credentialWith(b, ['progress.read']);
  const denied = await b.api('PUT', `${progressOf(b, u.id, p.id)}/lessons/${a.id}`, {
    body: { percent: 5 },
    secret: reader.secret,
  });
  assert.equal([denied.status, denied.body.error.details[0].reason], [403, 'progress.write']);
});

t('exam results: first 201, then replaced; If-Match; the item must be an exam', async ({ b }) => {
  const u = await student(b, 'p2@example.com');
  const p = await product(b, { name: 'Physics' });
  const exam = await lesson(b, p.id, { name: 'Midterm', kind: 'exam' });
  const plain = await lesson(b, p.id, { name: 'Optics' });
  const R = `/api/v3/users/${u.id}/exam-results/${exam.id}`;
  assert.is((await b.api('GET', R)).status, 404);
  const none = await b.api('PUT', R, {
    body: { score: 1, passed: false },
    headers: { 'if-match': '*' },
  });
  assert.is(none.status, 412);
  const first = await b.api('PUT', R, { body: { score: 45.5, passed: false } });
  assert.is(first.status, 201);
  const r = first.body.data;
  assert.equal(r, {
    object: 'exam_result',
    id: r.id,
    user_id: u.id,
    item_id: exam.id,
    product_id: p.id,
    score: 45.5,
    max_score: 100,
    passed: false,
    attempts: 1,
    submitted_at: r.created_at,
    revision: r.revision,
    created_at: r.created_at,
    updated_at: r.created_at,
  });
  assert.is(first.headers.get('etag'), `"${r.revision}"`);
  const stale = await b.api('PUT', R, {
    body: { score: 9, max_score: 10, passed: true, attempts: 2 },
    headers: { 'if-match': '"old"' },
  });
  assert.is(stale.status, 412);
  const second = await b.api('PUT', R, {
    body: {
      score: 9,
      max_score: 10,
      passed: true,
      attempts: 2,
      submitted_at: '2026-01-02T03:04:05Z',
    },
    headers: { 'if-match': `"${r.revision}"` },
  });
  assert.is(second.status, 200);
  assert.equal(
    [
      second.body.data.id,
      second.body.data.score,
      second.body.data.passed,
      second.body.data.submitted_at,
    ],
    [r.id, 9, true, '2026-01-02T03:04:05.000Z'],
  );
  const got = await b.api('GET', R);
  assert.equal(got.body.data, second.body.data);
  assert.is(got.headers.get('etag'), `"${second.body.data.revision}"`);
  const over = await b.api('PUT', R, { body: { score: 11, max_score: 10, passed: true } });
  assert.equal([over.status, over.body.error.details[0].field], [422, 'score']);
  const wrongKind = `/api/v3/users/${u.id}/exam-results/${plain.id}`;
  assert.is((await b.api('PUT', wrongKind, { body: { score: 1, passed: true } })).status, 404);
  assert.is((await b.api('GET', `/api/v3/users/999999/exam-results/${exam.id}`)).status, 404);
});

t.run();
