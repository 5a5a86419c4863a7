import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/store/sqlite/connection.js';
import type { SqliteDatabase } from '../../src/store/sqlite/driver.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { sdkClient } from '../support/sdk-http.js';
import { rpc } from '../support/stateless.js';
import { startWireServer, type WireServer } from '../support/wire-server.js';

// A SQLite file another process holds locked past the busy timeout: a task call on either wire
// answers the retryable -32001 (2026-07-28 with 503), never -32603, and works once the lock goes.

let wire: WireServer;
let other: SqliteDatabase;
let session: Client;

beforeAll(async () => {
  const path = join(await mkdtemp(join(tmpdir(), 'tasklatch-busy-')), 'tasks.db');
  wire = await startWireServer(await SqliteStore.open(path, { busyTimeoutMs: 200 }), { execute: false });
  other = openSqlite(path);
  session = await sdkClient(wire.http.url, 'token-alice');
});

afterAll(async () => {
  await session?.close();
  other?.close();
  await wire?.close();
});

const CALL = { name: 'export_ledger', arguments: { month: '2026-06', rows: 5 }, task: { ttl: 60_000 } };

describe('a SQLite store locked by another process', () => {
  it('answers -32001 Store unavailable on both wires while the lock is held, and admits again after', async () => {
    other.exec('BEGIN IMMEDIATE');
    try {
      const modern = await rpc(wire.http.url, 'tools/call', CALL, { token: 'token-alice' });
      expect(modern.status).toBe(503);
      expect(modern.error).toEqual({ code: -32001, message: 'Store unavailable: retry later', data: { retryAfterMs: 2000 } });
      const legacy = await session.request({ method: 'tools/call', params: CALL }, CreateTaskResultSchema).then(
        () => null,
        (e: unknown) => e,
      );
      expect(legacy).toBeInstanceOf(McpError);
      expect((legacy as McpError).code).toBe(-32001);
      expect((legacy as McpError).data).toEqual({ retryAfterMs: 2000 });
    } finally {
      other.exec('ROLLBACK');
    }
    const unavailable = wire.logs.filter((line) => line.msg === 'store unavailable');
    expect(unavailable.map((line) => [line.level, line.method])).toEqual([
      [40, 'tools/call'],
      [40, 'tools/call'],
    ]);
    expect(wire.logs.filter((line) => (line.level as number) >= 50)).toEqual([]);

    expect((await rpc(wire.http.url, 'tools/call', CALL, { token: 'token-alice' })).result).toMatchObject({ resultType: 'task' });
    expect((await session.request({ method: 'tools/call', params: CALL }, CreateTaskResultSchema)).task.taskId).toBeTypeOf('string');
  });
});
