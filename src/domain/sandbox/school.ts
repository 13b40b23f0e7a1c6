// The `empty_school` and `school_1000` scenarios. school_1000: six tags, five products (four
// published), three deliveries of the `generic` gateway, then 1,000 students, one per item (a
// chunk of the operation, 25 items, is one transaction: on SQLite it holds the process's event
// loop while it runs, so items stay small), each with 0-2 tags; about 55% buy through a delivery (a postback: transaction, enrollment, the
// delivery's tag), one sale in 20 of those is refunded, about 20% are granted access directly.
import type { Tx } from '../../db/engine.ts';
import { Prng } from './prng.ts';
import { sandboxRepo } from './repo.ts';
import type { Scenario, ScenarioPayload, ScenarioTools } from './tools.ts';

export const TAGS = ['vip', 'alumni', 'bootcamp', 'newsletter', 'scholarship', 'early-bird'];
const TOPICS = [
  'Algebra',
  'Photography',
  'Guitar',
  'Watercolor',
  'Python',
  'Spanish',
  'Marketing',
  'Yoga',
  'Chemistry',
  'Public Speaking',
  'Baking',
  'Statistics',
];
const LEVELS = ['Basics', 'Intermediate', 'Masterclass'];
const FIRST = [
  'Ana',
  'Bruno',
  'Carla',
  'Diego',
  'Elisa',
  'Felipe',
  'Gabriela',
  'Hugo',
  'Isabel',
  'João',
  'Larissa',
  'Marcos',
  'Natália',
  'Otávio',
  'Paula',
  'Rafael',
  'Sofia',
  'Tiago',
  'Vitória',
  'Yuri',
];
const LAST = [
  'Almeida',
  'Barbosa',
  'Cardoso',
  'Dias',
  'Esteves',
  'Ferreira',
  'Gomes',
  'Lima',
  'Martins',
  'Nunes',
  'Oliveira',
  'Pereira',
  'Queiroz',
  'Ribeiro',
  'Santos',
  'Teixeira',
  'Vieira',
  'Xavier',
];

export const STUDENTS = 1000;
const PER_PART = 1;
const PRODUCTS = 5;
const DELIVERIES = 3;

/** Lower-case ASCII for an address: "João" -> "joao". */
const slug = (s: string) =>
  s
    .normalize('NFD')
    .replace(/[^A-Za-z]/g, '')
    .toLowerCase();

const productName = (rng: Prng, topic: string) => `${topic} ${rng.pick(LEVELS)}`;

async function loadCatalog(t: ScenarioTools, tx: Tx, accountId: number, seed: number) {
  const rng = new Prng(seed, 'catalog');
  const tagIds: number[] = [];
  for (const name of TAGS) tagIds.push((await t.tags.create(accountId, { name }, { tx })).id);
  const products = [];
  for (const [i, topic] of rng.sample(TOPICS, PRODUCTS).entries()) {
    const name = productName(rng, topic);
    const p = await t.catalog.create(accountId, { name, description: `${name}, online.` }, { tx });
    if (i < PRODUCTS - 1) await t.catalog.publishProduct({ tx }, accountId, p.id);
    products.push(p);
  }
  for (let i = 0; i < DELIVERIES; i++) {
    const months = rng.pick([null, 6, 12]);
    await t.deliveries.create(
      accountId,
      {
        gateway: 'generic',
        name: `Checkout ${products[i]!.name}`,
        external_ids: [`sku-${i + 1}`],
        products: [{ product_id: String(products[i]!.id) }],
        tag_ids: [String(tagIds[i])],
        ...(months === null
          ? { duration_unit: 'lifetime' as const }
          : { duration: months, duration_unit: 'month' as const }),
      },
      { tx },
    );
  }
  return { tags: TAGS.length, products: PRODUCTS, deliveries: DELIVERIES };
}

async function loadStudents(t: ScenarioTools, tx: Tx, accountId: number, p: ScenarioPayload) {
  const part = Number(p.part.split('.')[1]);
  const rng = new Prng(p.seed, p.part);
  const ids = await sandboxRepo.scenarioCatalog({ tx }, accountId, TAGS);
  const counts = { students: 0, sales: 0, refunds: 0, enrollments: 0 };
  for (let i = 0; i < PER_PART; i++) {
    const n = part * PER_PART + i + 1;
    const first = rng.pick(FIRST);
    const last = rng.pick(LAST);
    const name = `${first} ${last}`;
    const email = `${slug(first)}.${slug(last)}.${n}@example.com`;
    const phone = rng.next() < 0.6 ? `+55 11 9${rng.digits(8)}` : null;
    const document = rng.next() < 0.5 ? rng.cpf() : null;
    const user = await t.users.create(accountId, { name, email, phone, document }, { tx });
    counts.students++;
    for (const tag of rng.sample(ids.tags, rng.int(3)))
      await t.tags.add(accountId, user.id, tag, { tx });
    const r = rng.next();
    if (r < 0.55 && ids.deliveries.length) {
      const d = await t.deliveries.get(accountId, rng.pick(ids.deliveries), { tx });
      const sale = {
        transaction_id: `ord-${p.seed}-${n}`,
        product_id: d.externalIds[0],
        client_name: name,
        client_email: email,
      };
      await t.postbacks.receiveIn({ tx }, d, { ...sale, status: 'approved' });
      counts.sales++;
      if (rng.next() < 0.05) {
        await t.postbacks.receiveIn({ tx }, d, { ...sale, status: 'refunded' });
        counts.refunds++;
      }
    } else if (r < 0.75 && ids.products.length) {
      const product = rng.pick(ids.products);
      const months = rng.pick([1, 3, 12]);
      await t.enrollments.grant(
        accountId,
        {
          user_id: String(user.id),
          product_id: String(product),
          duration: months,
          duration_unit: 'month',
        },
        { tx },
      );
      counts.enrollments++;
    }
  }
  return counts;
}

export const emptySchool: Scenario = {
  parts: () => ['product'],
  async load(t, tx, accountId, p) {
    const rng = new Prng(p.seed, 'product');
    const name = productName(rng, rng.pick(TOPICS));
    await t.catalog.create(accountId, { name, description: `${name}, online.` }, { tx });
    return { products: 1 };
  },
};

export const school1000: Scenario = {
  parts: () => [
    'catalog',
    ...Array.from({ length: STUDENTS / PER_PART }, (_, i) => `students.${i}`),
  ],
  load(t, tx, accountId, p) {
    return p.part === 'catalog'
      ? loadCatalog(t, tx, accountId, p.seed)
      : loadStudents(t, tx, accountId, p);
  },
};
