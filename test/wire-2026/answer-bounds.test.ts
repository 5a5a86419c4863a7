import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startHttpServer } from '../../src/http/http-server.js';
import { createTaskServer } from '../../src/wire-2025/server.js';
import { createLogger } from '../../src/runtime/log.js';
import type { TaskLimits } from '../../src/service/limits.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { Principal } from '../../src/tools/principal.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
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
  for (let i = 0; i < 3000; i++) {
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

describe('answers in a multi-round tools/call (2026-07-28)', () => {
  /** A plain tool that asks for a name (a required string of at most 20 characters) and greets it. */
  const greet = defineTool({
    name: 'greet',
    description: 'asks a name, then greets it',
    inputSchema: z.object({}),
    execution: { taskSupport: 'forbidden' },
    handler: async (_args, ctx) => {
      const requestedSchema = { type: 'object', properties: { name: { type: 'string', maxLength: 20 } }, required: ['name'] };
      const answer = await ctx.elicit({ message: 'Your name?', requestedSchema }, { key: 'user_name' });
      return { content: [{ type: 'text', text: `Hello, ${String(answer.content?.name)}!` }] };
    },
  }) as unknown as TaskTool;

  async function greeter(limits: Partial<TaskLimits> = {}) {
    const server = createTaskServer({
      store: new MemoryStore(),
      tools: [greet],
      authenticate: ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null,
      logger: createLogger('silent'),
      limits,
    });
    await server.start();
    const http = await startHttpServer({
      runtime: server.runtime,
      taskServer: server,
      host: '127.0.0.1',
      port: 0,
      tokens: new Map([['token-alice', { tenant: 'acme', subject: 'alice' }]]),
    });
    return { server, http };
  }

  it('refuses a requestState older than requestStateMaxAgeMs with -32602, every time', async () => {
    const { server, http } = await greeter({ requestStateMaxAgeMs: 200 });
    try {
      const asking = { ...ALICE, capabilities: { elicitation: {} } };
      const first = await rpc(http.url, 'tools/call', { name: 'greet', arguments: {} }, asking);
      const params = {
        name: 'greet',
        arguments: {},
        requestState: first.result!.requestState,
        inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } },
      };
      expect((await rpc(http.url, 'tools/call', params, asking)).result).toMatchObject({ resultType: 'complete' });
      await new Promise((r) => setTimeout(r, 300));
      for (let use = 0; use < 5; use += 1) {
        const late = await rpc(http.url, 'tools/call', params, asking);
        expect(late.error).toMatchObject({ code: -32602, message: expect.stringContaining('expired') as unknown });
      }
    } finally {
      await http.close();
      await server.close();
    }
  });

  it('refuses an answer not matching the schema, or too large, with -32602 naming the key; a right one is greeted', async () => {
    const { server, http } = await greeter();
    try {
      const asking = { ...ALICE, capabilities: { elicitation: {} } };
      const first = await rpc(http.url, 'tools/call', { name: 'greet', arguments: {} }, asking);
      expect(first.result).toMatchObject({ resultType: 'input_required', inputRequests: { user_name: { method: 'elicitation/create' } } });
      const round = (content: Record<string, unknown>) =>
        rpc(
          http.url,
          'tools/call',
          { name: 'greet', arguments: {}, requestState: first.result!.requestState, inputResponses: { user_name: { action: 'accept', content } } },
          asking,
        );
      for (const [content, says] of [
        [{ name: 42 }, 'user_name.content.name must be string'],
        [{ name: 'a'.repeat(21) }, 'must NOT have more than 20 characters'],
        [{}, "must have required property 'name'"],
        [{ name: 'Ada', note: 'n'.repeat(70 * 1024) }, 'at most 65536'],
      ] as const) {
        const refused = await round(content);
        expect(refused.error?.code).toBe(-32602);
        expect(refused.error?.message).toContain('user_name');
        expect(refused.error?.message).toContain(says);
      }
      expect((await round({ name: 'Ada' })).result).toMatchObject({ resultType: 'complete', content: [{ text: 'Hello, Ada!' }] });
    } finally {
      await http.close();
      await server.close();
    }
  });
});
