// Disk kept per request: the audit trail is the one table every call writes. Sends N v3 GETs (a
// mix of capabilities, a user by id, a user list and the current credential) through the real
// app, then measures the audit table (with its indexes) and prints one JSON line:
//   {"engine","requests","rows","bytes","perRequest"}
// With AUDIT_RETENTION_DAYS (90) of steady traffic, disk use is about perRequest x requests a day x 90.
//
//   node bench/audit-bytes.ts [sqlite|postgres://...] [requests=4000]
import { boot } from '../test/helpers/app.ts';

const database = process.argv[2] ?? 'sqlite';
const N = Number(process.argv[3] ?? 4000);
if (database !== 'sqlite') process.env.TEST_DATABASE_URL = database;
else delete process.env.TEST_DATABASE_URL;

const b = await boot();
try {
  const paths = [
    '/api/v3/capabilities',
    '/api/v3/users/123456',
    '/api/v3/users?limit=20',
    '/api/v3/credentials/current',
  ];
  let i = 0;
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (i < N) await b.api('GET', paths[i++ % paths.length]!);
    }),
  );
  const rows = Number((await b.app.db('audit_entries').count({ n: '*' }).first())!.n);
  let bytes: number;
  if (database !== 'sqlite') {
    await b.app.db.raw('VACUUM ANALYZE audit_entries');
    const r = await b.app.db.raw("select pg_total_relation_size('audit_entries') as t");
    bytes = Number(r.rows[0].t);
  } else {
    const pragma = async (p: string) =>
      Number(Object.values((await b.app.db.raw(`PRAGMA ${p}`))[0])[0]);
    const pages = await pragma('audit.page_count');
    const free = await pragma('audit.freelist_count');
    bytes = (pages - free) * (await pragma('audit.page_size'));
  }
  const engine = database === 'sqlite' ? 'sqlite' : 'postgres';
  console.log(JSON.stringify({ engine, requests: N, rows, bytes, perRequest: bytes / rows }));
} finally {
  await b.close();
}
