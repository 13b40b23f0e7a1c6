// Domain objects in v1's Portuguese shapes. Field for field the same student as v3's `user`.
import type { User } from '../../../domain/users/repo.ts';
import type { Tag } from '../../../domain/tags/repo.ts';
import type { DurationUnit } from '../../../domain/enrollments/duration.ts';
import type { ExamResult } from '../../../domain/progress/repo.ts';
import type { ProductProgress } from '../../../domain/progress/service.ts';
import type { AccessEntry } from '../../student-access.ts';

/** The auto-login URL is derived like v3's auto_login_url, so both follow PUBLIC_BASE_URL. */
export const autoLoginUrl = (publicBaseUrl: string, token: string): string =>
  `${publicBaseUrl}/login/auto?token=${encodeURIComponent(token)}`;

export function usuario(u: User, publicBaseUrl: string) {
  return {
    id: u.id,
    nome: u.name,
    email: u.email,
    celular: u.phone,
    doc: u.document,
    cargo: u.jobTitle,
    nome_empresa: u.companyName,
    tamanho_empresa: u.companySize,
    gratis: u.free,
    pontos: u.points,
    criado_em: u.createdAt,
    comecou_em: u.startedAt,
    ultimo_acesso_em: u.lastAccessAt,
    login_auto: autoLoginUrl(publicBaseUrl, u.autoLoginToken),
    login_crstk: u.autoLoginToken,
    utm: u.utm,
  };
}

export const tag = (t: Tag) => ({ id: t.id, nome: t.name });

/** v1 pages: absolute URLs carrying the opaque cursor, null at either end. */
export function paginator(
  url: string,
  page: { limit: number; next_cursor: string | null; prev_cursor: string | null },
) {
  const at = (cursor: string | null) =>
    cursor === null ? null : `${url}?cursor=${encodeURIComponent(cursor)}`;
  return {
    next_page_url: at(page.next_cursor),
    prev_page_url: at(page.prev_cursor),
    perPage: page.limit,
  };
}

const DURACAO_TIPO: Record<DurationUnit, string> = {
  day: 'dias',
  month: 'meses',
  year: 'anos',
  lifetime: 'vitalicio',
};

/**
 * v1 `acesso[]`, in the order given (by product name). `ordem` is the product's position in the
 * list, from 1 (two enrollments in one product share it); products have no offer page yet, so
 * `oferta_url` is null.
 */
export function acesso(entries: AccessEntry[]) {
  const ordem = new Map<number, number>();
  for (const { product } of entries)
    if (!ordem.has(product.id)) ordem.set(product.id, ordem.size + 1);
  return entries.map(({ enrollment: e, product: p }) => ({
    comecou_em: e.startedAt,
    duracao: e.duration,
    duracao_tipo: DURACAO_TIPO[e.durationUnit],
    encerra_em: e.endsAt,
    encerrado: e.ended,
    produto: { id: p.id, nome: p.name, oferta_url: null, ordem: ordem.get(p.id)! },
  }));
}

export function progresso(p: ProductProgress) {
  return {
    total: p.total,
    assistidas: p.watched,
    completas: p.completed,
    aulas: p.lessons.map((l) => ({
      id: l.lessonId,
      nome: l.name,
      percentual: l.percent,
      completa: l.completed,
      completada_em: l.completedAt,
    })),
  };
}

export function resultado(r: ExamResult) {
  return {
    item_id: r.itemId,
    produto_id: r.productId,
    nota: r.score,
    nota_maxima: r.maxScore,
    aprovado: r.passed,
    tentativas: r.attempts,
    enviado_em: r.submittedAt,
  };
}
