import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import { createPool, isConnectionFailure, parsePostgresUrl } from '../../src/store/postgres/connection.js';
import { startEmbeddedPostgres, type EmbeddedServer } from '../support/embedded-postgres.js';

// What the pool raises when PostgreSQL is gone: STORE_UNAVAILABLE, for the pool's own queries,
// its connections and a checked-out client's statements; a statement's own error passes as it is.

describe('isConnectionFailure', () => {
  it.each([
    [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }), true],
    [new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })], ''), true],
    [Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' }), true],
    [Object.assign(new Error('the database system is starting up'), { code: '57P03', severity: 'FATAL' }), true],
    [Object.assign(new Error('connection failure'), { code: '08006' }), true],
    [new Error('Connection terminated unexpectedly'), true],
    [new Error('timeout exceeded when trying to connect'), true],
    [Object.assign(new Error('duplicate key value'), { code: '23505', severity: 'ERROR' }), false],
    [Object.assign(new Error('canceling statement due to user request'), { code: '57014', severity: 'ERROR' }), false],
    [new Error('something else'), false],
  ])('%s → %s', (error, expected) => {
    expect(isConnectionFailure(error)).toBe(expected);
  });
});

describe('parsePostgresUrl', () => {
  it.each([
    ['postgres://u@db.internal:6432/app', 'db.internal:6432'],
    ['postgres://u@%2Fvar%2Frun%2Fpostgresql/app', '/var/run/postgresql:5432'],
    ['postgres:///app?host=/var/run/postgresql', '/var/run/postgresql:5432'],
    ['postgres:///app', 'localhost:5432'],
  ])('names the server of %s as %s', (url, address) => {
    expect(parsePostgresUrl(url).address).toBe(address);
  });
});

describe('a pool whose server is gone', () => {
  let pg: EmbeddedServer;
  beforeAll(async () => {
    pg = await startEmbeddedPostgres({ maxConnections: 20 });
  }, 120_000);
  afterAll(async () => {
    await pg?.stop();
  });

  it('raises STORE_UNAVAILABLE from query, connect and a checked-out client, and SQL errors as they are', async () => {
    const pool = createPool(parsePostgresUrl(pg.url), 2);
    try {
      await expect(pool.query('SELECT nonsense_column')).rejects.toMatchObject({ code: '42703' });
      const held = await pool.connect();
      await pg.halt();
      const fromClient = await held.query('SELECT 1').then(
        () => null,
        (e: unknown) => e,
      );
      held.release(true);
      expect(isTasklatchError(fromClient, 'STORE_UNAVAILABLE')).toBe(true);
      const fromQuery = await pool.query('SELECT 1').then(
        () => null,
        (e: unknown) => e,
      );
      expect(isTasklatchError(fromQuery, 'STORE_UNAVAILABLE')).toBe(true);
      expect((fromQuery as Error).message).toMatch(/^cannot connect to PostgreSQL at 127\.0\.0\.1:\d+: /);
      expect((fromQuery as Error).message).not.toContain(new URL(pg.url).password);
      const fromConnect = await pool.connect().then(
        () => null,
        (e: unknown) => e,
      );
      expect(isTasklatchError(fromConnect, 'STORE_UNAVAILABLE')).toBe(true);
      await pg.resume();
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  }, 60_000);
});
