// PostgreSQL: credentials (with their account and issuer chain) kept in memory across requests,
// each under the auth version it was read at (migration 018: a row that triggers move on any
// change to credentials or accounts, in the writer's transaction). Before using an entry a request
// reads the version with a statement that starts after the request arrived, so a change committed
// by any instance (or the admin CLI) before then is seen: B revokes, A refuses the next request.
// Requests share that read: one runs at a time and those that arrive meanwhile take the next one,
// so under load it is one small statement per round trip, not one per request.
import type { Db } from '../../db/knex.ts';
import { firstRow } from '../../db/statements.ts';
import { coalesce } from '../shared/coalesce.ts';

/** Entries kept at most; the oldest go first (a Map iterates in insertion order). */
const MAX_ENTRIES = 10_000;

export class VersionedCache<T> {
  private readonly entries = new Map<string, { version: string; value: T }>();
  private readonly db: Db;
  constructor(db: Db) {
    this.db = db;
  }

  /** The auth version, read by a statement that started after this call. */
  readonly version: () => Promise<string> = coalesce(() => this.read());

  private async read(): Promise<string> {
    // A named statement: parsed and planned once per connection (src/db/statements.ts).
    const row = await firstRow<{ version: unknown }>(
      { tx: this.db },
      'SELECT version FROM auth_version WHERE id = 1',
      [],
    );
    return String(row!.version);
  }

  get(key: string, version: string): T | undefined {
    const e = this.entries.get(key);
    if (e && e.version === version) return e.value;
    if (e) this.entries.delete(key);
    return undefined;
  }

  set(key: string, version: string, value: T): void {
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { version, value });
  }
}
