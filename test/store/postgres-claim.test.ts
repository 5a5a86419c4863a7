import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import { prepared, sqlLiteral, withLiterals } from '../../src/store/postgres/prepared.js';
import { sql } from '../../src/store/postgres/statements.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { ClaimInput } from '../../src/store/types.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { PG_NOW as NOW, pgAdmission as admission } from '../support/records.js';

// The PostgreSQL claim's round trips: BEGIN travels with the first locking read and the claim
// write with COMMIT, and when that write's guard refuses a claim, a second walk judges it again.

const open: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function fresh(label: string): Promise<PostgresStore> {
  const store = await PostgresStore.open(await freshPostgresUrl(label), { poolSize: 4 });
  open.push(store);
  return store;
}

const claimOf = (owner: string, extra: Partial<ClaimInput> = {}): ClaimInput => ({
  owner,
  now: NOW + 10,
  leaseMs: 60_000,
  limit: 4,
  maxAttempts: 2,
  abandonedResult: { content: [{ type: 'text', text: 'abandoned' }], isError: true },
  correlationId: `claim-${owner}`,
  ...extra,
});

/** Where the spied clients put the messages they send; null while nobody counts. */
let recording: string[] | null = null;
const spied = new WeakSet<pg.PoolClient>();

/** Every message the store's own pool sends while `run` runs: one a round trip. */
async function messagesOf<T>(store: PostgresStore, run: () => Promise<T>): Promise<{ value: T; messages: string[] }> {
  const messages: string[] = [];
  const onAcquire = (client: pg.PoolClient): void => {
    if (spied.has(client)) return;
    spied.add(client);
    const original = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0];
      recording?.push(typeof first === 'string' ? first : String((first as { text?: unknown }).text));
      return original(...args);
    };
  };
  store.pool.on('acquire', onAcquire);
  recording = messages;
  try {
    return { value: await run(), messages };
  } finally {
    recording = null;
    store.pool.off('acquire', onAcquire);
  }
}

/**
 * The first words of each message, enough to tell the statements apart. A connection prepares a
 * statement the first time it executes it (one PREPARE message, once per connection): those are
 * left out, and an EXECUTE is shown as the statement it runs.
 */
const shapes = (messages: readonly string[]) => {
  // Every statement of the store by its prepared name, and whatever a message prepared.
  const texts = new Map<string, string>(Object.values(sql).map((text) => [prepared(text).name, text]));
  for (const m of messages) {
    const prepared = /^PREPARE (\w+) AS ([\s\S]*)$/.exec(m);
    if (prepared !== null) texts.set(prepared[1] as string, prepared[2] as string);
  }
  const firstWords = (part: string) => part.trim().split(/\s+/).slice(0, 2).join(' ');
  return messages
    .filter((m) => !m.startsWith('PREPARE '))
    .map((m) =>
      m
        .split(/;(?=\s*(?:BEGIN|COMMIT|EXECUTE|SELECT|WITH|UPDATE|INSERT|SET)\b)/)
        .map((part) => {
          const executed = /^\s*EXECUTE (\w+)\(/.exec(part);
          return firstWords(executed === null ? part : (texts.get(executed[1] as string) ?? part));
        })
        .filter((part) => part !== '')
        .join(' | '),
    );
};

describe('PostgreSQL claim round trips', () => {
  it('claims in two round trips: BEGIN with the locking read, the claim write with COMMIT', async () => {
    const store = await fresh('claim_trips');
    const admitted = (await store.admit(admission({ toolName: 'it\'s \\ "quoted"' }))).record!;
    const { value: claimed, messages } = await messagesOf(store, () => store.claim(claimOf('w1', { tools: ['it\'s \\ "quoted"', 'other'] })));
    expect(claimed.map((r) => r.taskId)).toEqual([admitted.taskId]);
    expect(claimed[0]).toMatchObject({ version: admitted.version + 1, attempt: 1, leaseOwner: 'w1', leaseExpiresAt: NOW + 10 + 60_000 });
    expect(shapes(messages)).toEqual(['BEGIN | SET LOCAL | SELECT o.id', 'WITH wanted | COMMIT']);
    // Committed: another claimer finds nothing, and the audit has the claim.
    expect(await store.claim(claimOf('w2'))).toEqual([]);
    expect((await store.auditTrail({ taskId: admitted.taskId })).filter((a) => a.detail === 'claim w1')).toHaveLength(1);
  });

  it('an empty outbox costs two round trips, and entries it closes go with COMMIT', async () => {
    const store = await fresh('claim_trips_empty');
    expect(shapes((await messagesOf(store, () => store.claim(claimOf('w1')))).messages)).toEqual(['BEGIN | SET LOCAL | SELECT o.id', 'COMMIT']);
    const cancelled = (await store.admit(admission())).record!;
    await store.cancel({ authKey: cancelled.authKey, taskId: cancelled.taskId, now: NOW + 1, correlationId: 'c' });
    const live = (await store.admit(admission())).record!;
    // The cancel closed its entry already; an expired task's entry is closed by the walk.
    const expired = (await store.admit(admission({ ttl: 5 }))).record!;
    const { value: claimed, messages } = await messagesOf(store, () => store.claim(claimOf('w1')));
    expect(claimed.map((r) => r.taskId)).toEqual([live.taskId]);
    expect(shapes(messages)).toEqual(['BEGIN | SET LOCAL | SELECT o.id', 'WITH wanted | UPDATE task_outbox | COMMIT']);
    expect(await store.pendingDispatch()).toBe(1);
    expect((await store.get({ authKey: expired.authKey, taskId: expired.taskId, now: NOW })).record).toMatchObject({ version: expired.version, attempt: 0 });
  });

  it('an abandon is a statement of its own inside the transaction; the claims still go with COMMIT', async () => {
    const store = await fresh('claim_trips_abandon');
    const worn = (await store.admit(admission())).record!;
    await store.claim(claimOf('w0', { leaseMs: 1, maxAttempts: 1, now: NOW + 1 }));
    const fresh1 = (await store.admit(admission())).record!;
    const { value: claimed, messages } = await messagesOf(store, () => store.claim(claimOf('w1', { maxAttempts: 1 })));
    expect(claimed.map((r) => r.taskId)).toEqual([fresh1.taskId]);
    expect(shapes(messages)).toEqual(['BEGIN | SET LOCAL | SELECT o.id', 'WITH applied', 'WITH wanted | COMMIT']);
    expect((await store.get({ authKey: worn.authKey, taskId: worn.taskId, now: NOW + 20 })).record).toMatchObject({ status: 'failed' });
  });

  it('a claim the committed write refused is judged again by a second walk, inside its transaction', async () => {
    const store = await fresh('claim_refused_once');
    // A trigger skips the first claim of each task, as a guard that refused it would.
    await store.pool.query(`
      CREATE TABLE refused_once (task_id text PRIMARY KEY);
      CREATE FUNCTION refuse_first_claim() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.lease_owner IS NOT NULL AND NOT EXISTS (SELECT 1 FROM refused_once WHERE task_id = OLD.task_id) THEN
          INSERT INTO refused_once VALUES (OLD.task_id);
          RETURN NULL;
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_first_claim BEFORE UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION refuse_first_claim();`);
    const a = (await store.admit(admission({ now: NOW }))).record!;
    const b = (await store.admit(admission({ now: NOW + 1 }))).record!;
    const { value: claimed, messages } = await messagesOf(store, () => store.claim(claimOf('w1')));
    expect(claimed.map((r) => [r.taskId, r.version, r.attempt])).toEqual([
      [a.taskId, a.version + 1, 1],
      [b.taskId, b.version + 1, 1],
    ]);
    expect(shapes(messages)).toEqual(['BEGIN | SET LOCAL | SELECT o.id', 'WITH wanted | COMMIT', 'BEGIN | SET LOCAL | SELECT o.id', 'WITH wanted', 'COMMIT']);
    expect((await store.auditTrail({ taskId: a.taskId })).filter((e) => e.detail === 'claim w1')).toHaveLength(1);
  });

  it('a claim the guard refuses every time is an INTERNAL error and changes nothing', async () => {
    const store = await fresh('claim_refused_always');
    await store.pool.query(`
      CREATE FUNCTION refuse_claims() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.lease_owner IS NOT NULL THEN RETURN NULL; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_claims BEFORE UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION refuse_claims();`);
    const a = (await store.admit(admission())).record!;
    const error = await store.claim(claimOf('w1')).catch((e: unknown) => e);
    expect(isTasklatchError(error) && error.code).toBe('INTERNAL');
    expect((await store.get({ authKey: a.authKey, taskId: a.taskId, now: NOW })).record).toMatchObject({ version: a.version, attempt: 0, leaseOwner: null });
    expect(await store.pendingDispatch()).toBe(1);
  });

  it('when the second walk fails, the claims the first one committed are returned and the failure reported', async () => {
    const store = await fresh('claim_second_walk_fails');
    const problems: string[] = [];
    store.onProblem = (message) => problems.push(message);
    const a = (await store.admit(admission({ now: NOW }))).record!;
    const b = (await store.admit(admission({ now: NOW + 1 }))).record!;
    await store.pool.query(`
      CREATE FUNCTION refuse_claims_of_b() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.lease_owner IS NOT NULL AND OLD.task_id = '${b.taskId}' THEN RETURN NULL; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_claims_of_b BEFORE UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION refuse_claims_of_b();`);
    const claimed = await store.claim(claimOf('w1'));
    expect(claimed.map((r) => [r.taskId, r.leaseOwner])).toEqual([[a.taskId, 'w1']]);
    expect(problems).toEqual(['second claim walk failed']);
    expect((await store.get({ authKey: b.authKey, taskId: b.taskId, now: NOW })).record).toMatchObject({ version: b.version, attempt: 0, leaseOwner: null });
  });

  it('a walk PostgreSQL rolled back to break a deadlock runs again; past three, the error is the caller’s', async () => {
    const store = await fresh('claim_deadlock_victim');
    // The server's own 40P01 on the claim's task write, for the first `faults` walks: a sequence
    // counts them, since nothing else a rolled-back transaction wrote is kept.
    const failFirst = async (faults: number) => {
      await store.pool.query(`
        DROP TRIGGER IF EXISTS deadlock_victim ON tasks;
        DROP SEQUENCE IF EXISTS walks;
        CREATE SEQUENCE walks;
        CREATE OR REPLACE FUNCTION deadlock_victim() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.lease_owner IS NOT NULL AND nextval('walks') <= ${faults} THEN
            RAISE EXCEPTION 'deadlock detected' USING ERRCODE = '40P01';
          END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER deadlock_victim BEFORE UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION deadlock_victim();`);
    };
    const walks = async () => Number((await store.pool.query<{ n: string }>('SELECT last_value AS n FROM walks')).rows[0]!.n);
    const a = (await store.admit(admission())).record!;
    await failFirst(2);
    const claimed = await store.claim(claimOf('w1'));
    expect(claimed.map((r) => [r.taskId, r.leaseOwner, r.attempt])).toEqual([[a.taskId, 'w1', 1]]);
    expect(await walks()).toBe(3);
    // One claim, one audit line: the rolled-back walks left nothing.
    const trail = (await store.auditTrail({ taskId: a.taskId })).filter((l) => l.detail?.startsWith('claim ') === true);
    expect(trail).toHaveLength(1);

    const b = (await store.admit(admission({ now: NOW + 1 }))).record!;
    await failFirst(3);
    const error = await store.claim(claimOf('w2')).catch((e: unknown) => e);
    expect((error as { code?: unknown }).code).toBe('40P01');
    expect(await walks()).toBe(3);
    expect((await store.get({ authKey: b.authKey, taskId: b.taskId, now: NOW })).record).toMatchObject({ version: b.version, attempt: 0, leaseOwner: null });
  });
});

describe('SQL literals of arrays', () => {
  it('read back as the parameter would, for strings, integers and NULL elements', async () => {
    const store = await fresh('literals');
    const cases: [unknown[], string][] = [
      [[], 'text[]'],
      [['plain', "it's", 'back\\slash', '"quoted"', 'comma, {brace}', 'NULL', '', 'ünï ✓'], 'text[]'],
      [['a', null], 'text[]'],
      [[1, -2, 2 ** 40], 'bigint[]'],
      [['12', '9007199254740993'], 'bigint[]'],
      [[3, 4], 'int[]'],
    ];
    for (const [value, type] of cases) {
      const literal = withLiterals(`SELECT $1::${type} AS v`, [value]);
      expect(literal).not.toBeNull();
      const viaLiteral = (await store.pool.query<{ v: unknown }>(literal!)).rows[0]!.v;
      const viaParameter = (await store.pool.query<{ v: unknown }>(`SELECT $1::${type} AS v`, [value])).rows[0]!.v;
      expect(viaLiteral).toEqual(viaParameter);
    }
    // Nothing that would not read back exactly.
    expect(sqlLiteral([0.5])).toBeNull();
    expect(sqlLiteral([{ a: 1 }])).toBeNull();
    expect(sqlLiteral([2 ** 60])).toBeNull();
  });
});

describe('SQL literals of strings', () => {
  it("are pg's own escapeLiteral, and read back as the parameter would", async () => {
    const store = await fresh('string_literals');
    const texts = ['', 'plain', "it's", "''", 'back\\slash', "both ' and \\ and \\'", '{"a":"x\\"y","b":"it\'s"}', 'ünï ✓ 😀'];
    for (const text of texts) {
      expect(sqlLiteral(text)).toBe(pg.escapeLiteral(text));
      const read = (await store.pool.query<{ v: string }>(`SELECT ${sqlLiteral(text)}::text AS v`)).rows[0]!.v;
      expect(read).toBe(text);
    }
  });
});
