import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CallToolResultSchema, ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import type { Principal } from '../../src/tools/principal.js';
import { ALICE, callAsTask, memoryServer } from '../support/mcp.js';
import { until } from '../support/until.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A 2025-11-25 client that declares elicitation and answers every question with `answer`. */
async function elicitingClient(
  server: Awaited<ReturnType<typeof memoryServer>>['server'],
  answer: (message: string) => ElicitResult,
  principal: Principal = ALICE,
  /** Rewrites what the client sends, past the SDK client's own checks: a client that does not check. */
  rewrite?: (message: Record<string, unknown>) => Record<string, unknown>,
) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  if (rewrite !== undefined) {
    const send = clientSide.send.bind(clientSide);
    clientSide.send = (message, options) => send(rewrite(message) as typeof message, options);
  }
  await server.createSession(principal).connect(serverSide);
  const client = new Client({ name: 'eliciting', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return answer(request.params.message);
  });
  await client.connect(clientSide);
  cleanups.push(() => client.close());
  return { client, asked };
}

/** A plain tool that asks for a name within its call. */
const askName = defineTool({
  name: 'ask_name',
  description: 'asks for a name, then greets it',
  inputSchema: z.object({}),
  handler: async (_args, ctx) => {
    const answer = await ctx.elicit({ message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } });
    return { content: [{ type: 'text', text: `Hello, ${String(answer.content?.name)}!` }] };
  },
}) as unknown as TaskTool;

async function setup() {
  const s = await memoryServer({ extraTools: [askName] });
  cleanups.push(() => s.server.close());
  return s;
}

const exportFiles = async (dir: string) => (existsSync(join(dir, 'acme')) ? (await readdir(join(dir, 'acme'))).filter((f) => !f.endsWith('.partial')) : []);

describe('durable input on 2025-11-25', () => {
  it('asks through tasks/result: the SDK client answers, the export runs on and completes once', async () => {
    const { server, exportsDir } = await setup();
    const { client, asked } = await elicitingClient(server, () => ({ action: 'accept', content: { confirm: true } }));
    const created = await callAsTask(client, 'export_ledger', { month: '2026-06', rows: 30, confirm: true });
    const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ rows: 30 });
    expect(asked).toEqual(["Export 30 rows of acme's ledger for 2026-06?"]);
    expect((await exportFiles(exportsDir)).filter((f) => f.includes(created.task.taskId))).toHaveLength(1);
    const trail = await server.runtime.guard.context.store.auditTrail({ taskId: created.task.taskId });
    expect(trail.filter((e) => e.surface === 'input').map((e) => e.decision)).toEqual(['APPLY_ASK', 'APPLY_ANSWER']);
  });

  it('completes with callToolStream, which fetches tasks/result once the task waits for input', async () => {
    const { server } = await setup();
    const { client } = await elicitingClient(server, () => ({ action: 'accept', content: { confirm: true } }));
    const kinds: string[] = [];
    let final: unknown;
    for await (const message of client.experimental.tasks.callToolStream(
      { name: 'export_ledger', arguments: { month: '2026-07', rows: 10, confirm: true } },
      CallToolResultSchema,
      {
        task: { ttl: 60_000 },
      },
    )) {
      kinds.push(message.type);
      if (message.type === 'result') final = message.result;
      if (message.type === 'error') throw message.error;
    }
    expect(kinds[0]).toBe('taskCreated');
    expect(final).toMatchObject({ structuredContent: { rows: 10 } });
  });

  it('a declined confirmation ends the export with "export not confirmed" and writes nothing', async () => {
    const { server, exportsDir } = await setup();
    const { client } = await elicitingClient(server, () => ({ action: 'decline' }));
    const created = await callAsTask(client, 'export_ledger', { month: '2026-08', rows: 10, confirm: true });
    const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: [{ text: 'export not confirmed' }] });
    expect((await exportFiles(exportsDir)).filter((f) => f.includes(created.task.taskId))).toEqual([]);
  });

  it('refuses to ask a client that declared no elicitation: the task ends failed with -32021, nothing written', async () => {
    const { connect, exportsDir } = await setup();
    const client = await connect();
    const created = await callAsTask(client, 'export_ledger', { month: '2026-09', rows: 10, confirm: true });
    const error = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema).then(
      () => null,
      (e: unknown) => e as { code: number; message: string },
    );
    expect(error).toMatchObject({ code: -32021, message: expect.stringContaining('elicitation') });
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe('failed');
    expect(await exportFiles(exportsDir)).toEqual([]);
  });

  it('asks a plain call within the call', async () => {
    const { server } = await setup();
    const { client, asked } = await elicitingClient(server, () => ({ action: 'accept', content: { name: 'Ada' } }));
    const result = await client.request({ method: 'tools/call', params: { name: 'ask_name', arguments: {} } }, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'Hello, Ada!' }]);
    expect(asked).toEqual(['Your name?']);
  });

  it.each([
    ['too large', { action: 'accept', content: { confirm: true, note: 'n'.repeat(70 * 1024) } }],
    ['not matching its requestedSchema', { action: 'accept', content: { confirm: 'yes' } }],
  ])('an answer %s is not stored: the task still waits for it, nothing written', async (_name, bad) => {
    const { server, exportsDir } = await setup();
    const { client, asked } = await elicitingClient(
      server,
      () => ({ action: 'accept', content: { confirm: true } }),
      ALICE,
      (message) => ('result' in message && (message.result as { action?: string }).action === 'accept' ? { ...message, result: bad } : message),
    );
    const created = await callAsTask(client, 'export_ledger', { month: '2026-10', rows: 10, confirm: true });
    void client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema).catch(() => undefined);
    await until(() => (asked.length === 0 ? undefined : true));
    // A refused answer leaves the question outstanding: a later wake of the same tasks/result
    // (the run's lease given back, say) may ask it again, never anything else.
    expect(asked.length).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 200));
    expect(new Set(asked)).toEqual(new Set([asked[0]]));
    const found = await server.runtime.guard.context.store.inputs({ authKey: 'acme/alice', taskId: created.task.taskId, now: Date.now() });
    expect(found.inputs?.map((q) => q.response)).toEqual([null]);
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe('input_required');
    const trail = await server.runtime.guard.context.store.auditTrail({ taskId: created.task.taskId });
    expect(trail.filter((e) => e.surface === 'input').map((e) => e.decision)).toEqual(['APPLY_ASK']);
    expect(await exportFiles(exportsDir)).toEqual([]);
  });

  it('a plain call whose answer is too large ends with -32602 naming the key', async () => {
    const { server } = await setup();
    const { client } = await elicitingClient(server, () => ({ action: 'accept', content: { name: 'A'.repeat(70 * 1024) } }));
    const error = await client.request({ method: 'tools/call', params: { name: 'ask_name', arguments: {} } }, CallToolResultSchema).then(
      () => null,
      (e: unknown) => e as { code: number; message: string },
    );
    expect(error?.code).toBe(-32602);
    expect(error?.message).toContain('at most 65536');
  });
});
