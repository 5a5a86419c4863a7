import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { PG_NOW as NOW } from '../support/records.js';

// Retention sweeps on one schema from several processes: a sweep passes over the tasks another
// sweeper holds and takes the next ones due, so a batch comes back short (`more` false) only
// when fewer than its limit are left to take.

describe('PostgreSQL retention sweep beside another sweeper', () => {
  let store: PostgresStore;

  beforeAll(async () => {
    store = await PostgresStore.open(await freshPostgresUrl('pg_sweep_beside'));
  });
  afterAll(async () => store.close());

  /** `count` tasks past retention, `expired` of them by their expiry and the rest finished long ago. */
  async function pastRetention(prefix: string, count: number, expired: number): Promise<void> {
    await store.pool.query(
      `INSERT INTO tasks (task_id, auth_key, status, version, created_at_ms, last_updated_at_ms, expires_at_ms)
       SELECT $1 || lpad(i::text, 4, '0'), 'tenant-a/alice', 'completed', 2, 0, i, CASE WHEN i <= $3 THEN $4::bigint + i END
         FROM generate_series(1, $2::int) AS i`,
      [prefix, count, expired, NOW - 86_400_000],
    );
  }

  /** Runs `work` while another transaction holds the first `held` tasks a sweep would take, as a sweeper mid-batch does. */
  async function whileHeld<T>(held: string, work: () => Promise<T>): Promise<T> {
    const other = await store.pool.connect();
    try {
      await other.query('BEGIN');
      await other.query(held);
      return await work();
    } finally {
      await other.query('ROLLBACK');
      other.release();
    }
  }

  it('takes the next expired tasks past those another sweeper holds, and says more while any are left', async () => {
    await pastRetention('e', 300, 300);
    const out = await whileHeld('SELECT task_id FROM tasks WHERE expires_at_ms IS NOT NULL ORDER BY expires_at_ms LIMIT 100 FOR UPDATE', () =>
      store.sweepExpired({ now: NOW, limit: 100, retentionMs: 0 }),
    );
    expect(out).toMatchObject({ tasks: 100, more: true });
    const left = await store.pool.query<{ task_id: string }>('SELECT task_id FROM tasks ORDER BY task_id');
    // The held hundred stay, the next hundred went, the last hundred are left for the next batch.
    expect(left.rows.map((r) => r.task_id)).toEqual(
      Array.from({ length: 300 }, (_, i) => `e${String(i + 1).padStart(4, '0')}`).filter((_, i) => i < 100 || i >= 200),
    );
    expect(await store.sweepExpired({ now: NOW, limit: 1000, retentionMs: 0 })).toMatchObject({ tasks: 200, more: false });
  });

  it('takes finished tasks past the held ones too, and only as many as the expired leave room for', async () => {
    await pastRetention('f', 300, 50);
    const held = 'SELECT task_id FROM tasks WHERE expires_at_ms IS NULL ORDER BY last_updated_at_ms LIMIT 100 FOR UPDATE';
    const out = await whileHeld(held, () => store.sweepExpired({ now: NOW, limit: 100, retentionMs: 0 }));
    // The 50 expired, then 50 of the finished after the hundred held.
    expect(out).toMatchObject({ tasks: 100, more: true });
    const left = await store.pool.query<{ task_id: string }>('SELECT task_id FROM tasks ORDER BY task_id');
    expect(left.rows.map((r) => r.task_id)).toEqual(
      Array.from({ length: 300 }, (_, i) => `f${String(i + 1).padStart(4, '0')}`).filter((_, i) => (i >= 50 && i < 150) || i >= 200),
    );
    expect(await store.sweepExpired({ now: NOW, limit: 1000, retentionMs: 0 })).toMatchObject({ tasks: 200, more: false });
  });
});
