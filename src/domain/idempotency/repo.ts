// Idempotency records: a lock row per (credential, key), completed with the recorded response.
import type { Tx } from '../../db/knex.ts';
import { bool, isUniqueViolation } from '../../db/dialect.ts';
import { execute, firstRow } from '../../db/statements.ts';
import { foldingConnection, inPipeline, withCommit } from '../../db/pg-pipeline.ts';

export interface RecordedResponse {
  status: number;
  headers: Record<string, string>;
  body: string | null;
  replayable: boolean;
}

export interface IdemRecord {
  id: number;
  requestHash: string;
  state: 'in_progress' | 'completed' | 'uncertain';
  owner: string;
  lockedAt: string;
  responseStatus: number | null;
  responseHeaders: Record<string, string>;
  responseBody: string | null;
  replayable: boolean;
  createdAt: string;
}

const map = (r: any): IdemRecord => ({
  id: Number(r.id),
  requestHash: r.request_hash,
  state: r.state,
  owner: r.owner,
  lockedAt: r.locked_at,
  responseStatus: r.response_status === null ? null : Number(r.response_status),
  responseHeaders: r.response_headers ? JSON.parse(r.response_headers) : {},
  responseBody: r.response_body,
  replayable: bool(r.replayable),
  createdAt: r.created_at,
});

// PostgreSQL, a claim inside the request's transaction (migration 032): the claim, then a
// savepoint that a business rejection rolls back to (its effects undone, the key's lock kept).
const CLAIM = 'SELECT held, same_body, record FROM idempotency_claim(?, ?, ?, ?)';
const SAVEPOINT = 'SAVEPOINT idempotency_claim';
const INSERT_COMPLETED =
  'INSERT INTO idempotency_keys (credential_id, key, request_hash, state, owner, locked_at, created_at, ' +
  "response_status, response_headers, response_body, replayable) VALUES (?, ?, ?, 'completed', ?, ?, ?, ?, ?, ?, ?)";
/** `?` to `$n`, for statements sent by src/db/pg-pipeline.ts rather than through knex. */
const dollars = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};
// Rewritten once, not on every keyed request.
const CLAIM_PG = dollars(CLAIM);
const INSERT_COMPLETED_PG = dollars(INSERT_COMPLETED);

export const idempotencyRepo = {
  /**
   * PostgreSQL: takes the key's locks and reads its record (migration 032), then sets the
   * savepoint; in one round trip with the transaction's BEGIN where the connection allows it.
   */
  async claim(
    { tx }: { tx: Tx },
    credentialId: number,
    key: string,
    hash: string,
    forgotten: string,
  ): Promise<{ held: boolean; sameBody: boolean; record: IdemRecord | null }> {
    const params = [credentialId, key, hash, forgotten];
    const client = await foldingConnection({ tx });
    let row: any;
    if (client) {
      const [claimed] = await inPipeline(client, tx, [
        { text: CLAIM_PG, values: params, name: 'idempotency_claim_032' },
        { text: SAVEPOINT },
      ]);
      row = claimed!.rows[0];
    } else {
      row = await firstRow({ tx }, CLAIM, params);
      await tx.raw(SAVEPOINT);
    }
    return {
      held: row.held === true,
      sameBody: row.same_body === true,
      record: row.record ? map(row.record) : null,
    };
  },

  /** Back to the claim's savepoint (PostgreSQL): the request's effects undone, its lock kept. */
  async rollbackToClaim({ tx }: { tx: Tx }): Promise<void> {
    await tx.raw(`ROLLBACK TO ${SAVEPOINT}`);
  },

  /**
   * PostgreSQL: the completed record of a claimed key, sent with the transaction's COMMIT where
   * the connection allows it. A record there already (written by the committed-row path
   * meanwhile) fails the insert, and the transaction with it.
   */
  async insertCompleted(
    { tx }: { tx: Tx },
    row: { credentialId: number; key: string; hash: string; owner: string; now: string },
    res: RecordedResponse,
  ): Promise<void> {
    const params = [
      row.credentialId,
      row.key,
      row.hash,
      row.owner,
      row.now,
      row.now,
      res.status,
      JSON.stringify(res.headers),
      res.body,
      res.replayable,
    ];
    const step = {
      text: INSERT_COMPLETED_PG,
      values: params,
      name: 'idempotency_record_032',
    };
    if (!(await withCommit({ tx }, step))) await execute({ tx }, INSERT_COMPLETED, params);
  },

  /** Inserts the lock row; false when the key already exists. */
  async tryLock(
    { tx }: { tx: Tx },
    row: { credentialId: number; key: string; hash: string; owner: string; now: string },
  ): Promise<boolean> {
    try {
      await execute(
        { tx },
        'INSERT INTO idempotency_keys (credential_id, key, request_hash, state, owner, locked_at, created_at) ' +
          "VALUES (?, ?, ?, 'in_progress', ?, ?, ?)",
        [row.credentialId, row.key, row.hash, row.owner, row.now, row.now],
      );
      return true;
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
  },

  async find({ tx }: { tx: Tx }, credentialId: number, key: string): Promise<IdemRecord | null> {
    const r = await firstRow(
      { tx },
      'SELECT * FROM idempotency_keys WHERE credential_id = ? AND key = ? LIMIT 1',
      [credentialId, key],
    );
    return r ? map(r) : null;
  },

  /**
   * SQLite, where a running request's lock lives in memory (see the service): writes the completed
   * record, or completes the lock row this owner holds; 0 when someone else holds the key.
   */
  record(
    { tx }: { tx: Tx },
    row: { credentialId: number; key: string; hash: string; owner: string; createdAt: string },
    res: RecordedResponse,
  ): Promise<number> {
    return execute(
      { tx },
      'INSERT INTO idempotency_keys (credential_id, key, request_hash, state, owner, locked_at, created_at, ' +
        "response_status, response_headers, response_body, replayable) VALUES (?, ?, ?, 'completed', ?, ?, ?, ?, ?, ?, ?) " +
        'ON CONFLICT (credential_id, key) DO UPDATE SET state = excluded.state, ' +
        'response_status = excluded.response_status, response_headers = excluded.response_headers, ' +
        'response_body = excluded.response_body, replayable = excluded.replayable ' +
        "WHERE idempotency_keys.owner = excluded.owner AND idempotency_keys.state = 'in_progress'",
      [
        row.credentialId,
        row.key,
        row.hash,
        row.owner,
        row.createdAt,
        row.createdAt,
        res.status,
        JSON.stringify(res.headers),
        res.body,
        res.replayable,
      ],
    );
  },

  /** Deletes a record only if it is still the one we looked at. */
  async deleteIf({ tx }: { tx: Tx }, id: number, state: string): Promise<number> {
    return tx('idempotency_keys').where({ id, state }).delete();
  },

  /** Takes over an uncertain record; false if another request did first. */
  async relock({ tx }: { tx: Tx }, id: number, owner: string, now: string): Promise<boolean> {
    const n = await tx('idempotency_keys')
      .where({ id, state: 'uncertain' })
      .update({ state: 'in_progress', owner, locked_at: now });
    return n === 1;
  },

  async markUncertain({ tx }: { tx: Tx }, id: number, lockedAt: string): Promise<void> {
    await tx('idempotency_keys')
      .where({ id, state: 'in_progress', locked_at: lockedAt })
      .update({ state: 'uncertain' });
  },

  /** Completes the lock held by `owner`; returns 0 when that lock is no longer ours. */
  complete(
    { tx }: { tx: Tx },
    credentialId: number,
    key: string,
    owner: string,
    res: RecordedResponse,
  ): Promise<number> {
    return execute(
      { tx },
      "UPDATE idempotency_keys SET state = 'completed', response_status = ?, response_headers = ?, " +
        "response_body = ?, replayable = ? WHERE credential_id = ? AND key = ? AND owner = ? AND state = 'in_progress'",
      [res.status, JSON.stringify(res.headers), res.body, res.replayable, credentialId, key, owner],
    );
  },

  async release(
    { tx }: { tx: Tx },
    credentialId: number,
    key: string,
    owner: string,
  ): Promise<void> {
    await tx('idempotency_keys')
      .where({ credential_id: credentialId, key, owner, state: 'in_progress' })
      .delete();
  },
};
