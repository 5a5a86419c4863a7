import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { rpc, settle, WITH_TASKS } from '../support/stateless.js';
import { startWireServer, storedState, type WireServer } from '../support/wire-server.js';

const ALICE = { token: 'token-alice' };
let wire: WireServer;

beforeAll(async () => {
  wire = await startWireServer(new MemoryStore());
});

afterAll(async () => {
  await wire.close();
});

/** An export that asks `confirm-export` ({ confirm: boolean }, required) and waits for it. */
async function waitingExport(month: string): Promise<string> {
  const created = await rpc(
    wire.http.url,
    'tools/call',
    { name: 'export_ledger', arguments: { month, rows: 5, confirm: true } },
    { ...ALICE, capabilities: { ...WITH_TASKS, elicitation: {} } },
  );
  const taskId = created.result!.taskId as string;
  for (let i = 0; i < 300; i++) {
    if ((await rpc(wire.http.url, 'tasks/get', { taskId }, ALICE)).result?.status === 'input_required') return taskId;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the export never asked');
}

describe('answers on 2026-07-28 tasks/update', () => {
  it.each([
    ['a 3 MiB answer', { action: 'accept', content: { confirm: true, note: 'n'.repeat(3 * 1024 * 1024) } }, 'at most 65536'],
    ['a 70 KiB decline', { action: 'decline', content: { note: 'n'.repeat(70 * 1024) } }, 'at most 65536'],
    ['content of the wrong type', { action: 'accept', content: { confirm: 'yes' } }, 'confirm-export.content.confirm must be boolean'],
    ['content missing a required member', { action: 'accept', content: {} }, "must have required property 'confirm'"],
  ])('refuses %s with -32602 naming the key, and stores nothing', async (_name, answer, says) => {
    const taskId = await waitingExport('2026-01');
    const before = await storedState(wire.store);
    const refused = await rpc(wire.http.url, 'tasks/update', { taskId, inputResponses: { 'confirm-export': answer } }, ALICE);
    expect(refused.status).toBe(400);
    expect(refused.error?.code).toBe(-32602);
    expect(refused.error?.message).toContain('confirm-export');
    expect(refused.error?.message).toContain(says);
    expect(await storedState(wire.store)).toEqual(before);
    const still = await rpc(wire.http.url, 'tasks/get', { taskId }, ALICE);
    expect(still.result).toMatchObject({ status: 'input_required', inputRequests: { 'confirm-export': { method: 'elicitation/create' } } });
    // The right answer is still taken, and the task runs on.
    const ack = await rpc(
      wire.http.url,
      'tasks/update',
      { taskId, inputResponses: { 'confirm-export': { action: 'accept', content: { confirm: true } } } },
      ALICE,
    );
    expect(ack.result).toEqual({ resultType: 'complete' });
    expect(await settle(wire.http.url, taskId, ALICE)).toMatchObject({ status: 'completed' });
  });
});
