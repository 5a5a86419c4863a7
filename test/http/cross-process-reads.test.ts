import { afterAll, describe, expect, it } from 'vitest';
import { isTerminal, type TaskStatus } from '../../src/core/types.js';
import { delayedNotifications } from '../support/delayed-notifications.js';
import { rpc } from '../support/stateless.js';
import { postgresHarness, sqliteHarness } from '../support/stores.js';
import { startWireServer, type WireServer } from '../support/wire-server.js';

const ALICE = { token: 'token-alice' };
const ROUNDS = 150;

const servers: WireServer[] = [];
afterAll(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/**
 * Two servers on one store (a PostgreSQL schema; a SQLite file), each other's change
 * notifications held back 100–400 ms or lost: a client behind a load balancer writes through
 * one and reads through the other at once. Every read must show the acknowledged write, and a
 * status a client saw never goes back.
 */
for (const harness of [postgresHarness, sqliteHarness]) {
  describe(`two servers on one ${harness.name} store, notifications late or lost`, () => {
    it(`${ROUNDS} rounds of write on one, read on the other: 0 stale, 0 backward`, async () => {
      const handles = await harness.openMany('cross_reads', 2);
      const delay = () => (Math.random() < 0.2 ? null : 100 + Math.random() * 300);
      const [a, b] = await Promise.all(handles.map((store) => startWireServer(delayedNotifications(store, delay))));
      servers.push(a!, b!);
      const ends = [a!.http.url, b!.http.url];
      let stale = 0;
      let backward = 0;
      let reads = 0;
      const lastSeen = new Map<string, TaskStatus>();
      const read = async (url: string, taskId: string, expected: TaskStatus) => {
        const got = await rpc(url, 'tasks/get', { taskId }, ALICE);
        const status = got.result?.status as TaskStatus | undefined;
        reads += 1;
        if (status !== expected) stale += 1;
        const before = lastSeen.get(taskId);
        if (before !== undefined && status !== undefined && isTerminal(before) && status !== before) backward += 1;
        if (status !== undefined) lastSeen.set(taskId, status);
      };
      for (let round = 0; round < ROUNDS; round++) {
        // Alternate which server writes: each is "the other" half the time.
        const [writer, reader] = round % 2 === 0 ? [ends[0]!, ends[1]!] : [ends[1]!, ends[0]!];
        const created = await rpc(writer, 'tools/call', { name: 'hold', arguments: {} }, ALICE);
        const taskId = created.result?.taskId as string;
        expect(typeof taskId).toBe('string');
        await read(reader, taskId, 'working');
        expect((await rpc(reader, 'tasks/cancel', { taskId }, ALICE)).result).toEqual({ resultType: 'complete' });
        // The cancel was acknowledged by `reader`; `writer` has not heard of it (its notification is late or lost).
        await read(writer, taskId, 'cancelled');
        await read(reader, taskId, 'cancelled');
        await read(writer, taskId, 'cancelled');
      }
      console.log(`${harness.name}: ${reads} reads across two servers, ${stale} stale, ${backward} backward`);
      expect({ stale, backward }).toEqual({ stale: 0, backward: 0 });
    });
  });
}
