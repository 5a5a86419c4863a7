import { describe, expect, it } from 'vitest';
import { listTasks } from '../../../src/runtime/requests/list-tasks.js';
import { admitted, ALICE, BOB, memoryRuntime } from './support.js';

describe('listTasks', () => {
  it("pages the caller's tasks only, and answers a cursor that is not the caller's as invalid-cursor", async () => {
    const runtime = await memoryRuntime();
    try {
      const mine = await admitted(runtime);
      await admitted(runtime, BOB);
      const page = await listTasks(runtime, { auth: ALICE });
      expect(page).toMatchObject({ kind: 'page', nextCursor: null });
      expect(page.kind === 'page' ? page.records.map((r) => r.taskId) : []).toEqual([mine.taskId]);
      expect(await listTasks(runtime, { auth: ALICE, cursor: 'not-a-cursor' })).toEqual({ kind: 'invalid-cursor' });
    } finally {
      await runtime.close();
    }
  });

  it('is not supported where callers are not identified', async () => {
    const runtime = await memoryRuntime({ callersIdentified: false });
    try {
      expect(await listTasks(runtime, { auth: ALICE })).toEqual({ kind: 'not-supported' });
    } finally {
      await runtime.close();
    }
  });
});
