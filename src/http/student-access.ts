// A student's access as the legacy pages show it: every enrollment (current and ended) with its
// product, ordered by product name. Read through the same services as v3's
// GET /users/{id}/enrollments and GET /products/{id}; used by v1 `usuario/acesso` and /login/auto.
import type { Services } from '../services.ts';
import type { Product } from '../domain/catalog/types.ts';
import type { Enrollment } from '../domain/enrollments/types.ts';

export interface AccessEntry {
  enrollment: Enrollment;
  product: Product;
}

/** A student has few enrollments; they are read in pages of 200 until the last. */
export async function studentAccess(
  services: Pick<Services, 'enrollments' | 'catalog'>,
  accountId: number,
  userId: number,
): Promise<AccessEntry[]> {
  const enrollments: Enrollment[] = [];
  let cursor: string | undefined;
  do {
    const page = await services.enrollments.listForUser(accountId, userId, {
      sort: 'created_at',
      limit: 200,
      cursor,
    });
    enrollments.push(...page.rows);
    cursor = page.page.next_cursor ?? undefined;
  } while (cursor);
  const products = new Map<number, Product>();
  for (const e of enrollments) {
    if (!products.has(e.productId))
      products.set(e.productId, await services.catalog.get(accountId, e.productId));
  }
  const byName = new Intl.Collator('pt-BR', { sensitivity: 'base' });
  return enrollments
    .map((enrollment) => ({ enrollment, product: products.get(enrollment.productId)! }))
    .sort(
      (a, b) =>
        byName.compare(a.product.name, b.product.name) ||
        a.product.id - b.product.id ||
        a.enrollment.id - b.enrollment.id,
    );
}
