// Before any test: a TEST_DATABASE_URL that cannot serve the PostgreSQL pass is one line that says
// what to do, not a pass of 600 failures. The suites create a schema each, so the role needs
// CREATE on the database (CREATEDB is not needed).
import pg from 'pg';

const ROLE_HINT = `sudo -u postgres psql -c "CREATE ROLE school LOGIN PASSWORD 'school'" -c "CREATE DATABASE school_test OWNER school"`;

/** Null when the database is usable, else the one-line reason and what to run. */
export async function postgresProblem(url: string): Promise<string | null> {
  let where = url;
  try {
    const u = new URL(url);
    u.password = u.password ? '***' : '';
    where = u.toString();
  } catch {
    return `TEST_DATABASE_URL is not a URL (postgres://user:password@host:5432/database): ${url}`;
  }
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (err) {
    const e = err as { code?: string; message: string };
    if (e.code === 'ECONNREFUSED' || e.code === 'ETIMEDOUT' || e.code === 'ENOTFOUND')
      return `TEST_DATABASE_URL: nothing answers at ${where} (${e.code}); start PostgreSQL (e.g. pg_ctlcluster 15 main start) or fix the host and port.`;
    if (e.code === '28P01' || e.code === '28000')
      return `TEST_DATABASE_URL: ${e.message}; create the role and its database: ${ROLE_HINT}`;
    if (e.code === '3D000')
      return `TEST_DATABASE_URL: ${e.message}; create it: sudo -u postgres createdb -O <role> <database>`;
    return `TEST_DATABASE_URL: cannot connect to ${where}: ${e.message}`;
  }
  try {
    const { rows } = await client.query(
      `select has_database_privilege(current_user, current_database(), 'CREATE') as ok, current_user as role, current_database() as db`,
    );
    const r = rows[0];
    if (!r.ok)
      return `TEST_DATABASE_URL: role ${r.role} may not create schemas in ${r.db} (each suite makes its own); run: sudo -u postgres psql -c 'GRANT CREATE ON DATABASE "${r.db}" TO "${r.role}"'`;
    return null;
  } finally {
    await client.end().catch(() => undefined);
  }
}
