import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallToolResultV2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import { taskId, type JsonValue } from '@modelcontextprotocol/ext-tasks/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { framed, legacyRequester, modernRequester, post, type Requester } from '../../src/client.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const anyResult = z.looseObject({});

let dir: string;
let serve: ServeProcess;
const opened: Requester[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-requester-'));
  const tokens = join(dir, 'tokens.json');
  await writeFile(tokens, JSON.stringify({ 'token-alice': { tenant: 'acme', subject: 'alice' }, 'token-bob': { tenant: 'globex', subject: 'bob' } }));
  serve = await spawnServe(['--store', `sqlite:${join(dir, 'tasks.db')}`, '--auth-tokens', tokens, '--exports', join(dir, 'exports')]);
});

afterAll(async () => {
  await Promise.allSettled(opened.map((r) => r.close()));
  expect(await serve.stop()).toBe(0);
});

async function open(generation: 'modern' | 'legacy', token: string): Promise<Requester> {
  const requester = await (generation === 'modern' ? modernRequester : legacyRequester)(serve.url, { token });
  opened.push(requester);
  return requester;
}

/** Starts a task-backed tool call and returns its task id. */
async function startTask(requester: Requester, name: string, args: Record<string, JsonValue>) {
  const execution = await requester.session.callTool<CallToolResultV2>(name, args, { task: { preference: 'require' } });
  if (execution.kind !== 'task') throw new Error(`${name} did not become a task`);
  return { execution, id: execution.handle.taskId as string };
}

/** The task's files in the tenant's export folder, once none is a partial file any more (a stopped export removes its partial). */
async function exportFilesOf(tenant: string, id: string, timeoutMs = 30_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const files = (await readdir(join(dir, 'exports', tenant)).catch(() => [] as string[])).filter((f) => f.includes(id));
    if (files.every((f) => !f.endsWith('.partial')) || Date.now() > deadline) return files;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('2026-07-28 through @modelcontextprotocol/ext-tasks', () => {
  let alice: Requester;
  beforeAll(async () => {
    alice = await open('modern', 'token-alice');
    expect(alice.client.getProtocolEra()).toBe('modern');
  });

  it('negotiates the tasks extension', () => {
    expect(alice.session.capabilities).toMatchObject({ execution: true, cancellation: true });
  });

  it('export_ledger becomes a task and settles completed with the file it wrote', async () => {
    const { execution } = await startTask(alice, 'export_ledger', { month: '2026-06', rows: 50 });
    const { outcome } = await execution.settle();
    if (outcome.status !== 'completed') throw new Error(`settled ${outcome.status}`);
    const content = outcome.result.structuredContent as { file: string; rows: number; sha256: string };
    expect(content.rows).toBe(50);
    expect(
      createHash('sha256')
        .update(await readFile(content.file))
        .digest('hex'),
    ).toBe(content.sha256);
  });

  it('a tool error settles completed with isError (the 2026 reading)', async () => {
    const { execution } = await startTask(alice, 'export_ledger', { month: '2026-13' });
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('completed');
    expect(outcome.status === 'completed' && outcome.result.isError).toBe(true);
  });

  it('cancelling a long export settles cancelled and leaves no export file', async () => {
    const { execution, id } = await startTask(alice, 'export_ledger', { month: '2026-05', rows: 50, delayMs: 5000 });
    expect((await alice.session.task(taskId(id)).snapshot()).status).toBe('working');
    const settled = execution.settle();
    await execution.cancel();
    expect((await settled).outcome.status).toBe('cancelled');
    expect(await exportFilesOf('acme', id)).toEqual([]);
    expect((await alice.session.task(taskId(id)).snapshot()).status).toBe('cancelled');
  });

  it('lookup answers immediately', async () => {
    const execution = await alice.session.callTool<CallToolResultV2>('lookup', { account: 'cash' });
    expect(execution.kind).toBe('immediate');
    const { outcome } = await execution.settle();
    expect(outcome.status === 'completed' && outcome.result.structuredContent).toMatchObject({ account: 'cash' });
  });

  it("bob's tasks/get and tasks/cancel of alice's task answer exactly like an unknown id", async () => {
    const { execution, id } = await startTask(alice, 'export_ledger', { month: '2026-04', rows: 5 });
    await execution.settle();
    const unknown = randomUUID();
    const ask = async (method: string, target: string) => {
      const { status, reply } = await post(serve.url, framed(method, { taskId: target }), { token: 'token-bob' });
      return JSON.parse(JSON.stringify({ status, error: reply.error }).replaceAll(target, '<id>')) as unknown;
    };
    for (const method of ['tasks/get', 'tasks/cancel']) {
      const missing = await ask(method, unknown);
      expect(missing, method).toMatchObject({ error: { code: expect.any(Number) } });
      expect(await ask(method, id), method).toEqual(missing);
    }
    const bob = await open('modern', 'token-bob');
    const notFound = (await post(serve.url, framed('tasks/get', { taskId: unknown }), { token: 'token-bob' })).reply.error;
    await expect(bob.session.task(taskId(id)).snapshot()).rejects.toMatchObject({ code: notFound?.code, message: notFound?.message });
    expect((await alice.session.task(taskId(id)).snapshot()).status).toBe('completed');
  });
});

describe('one task record, read in both generations', () => {
  let modern: Requester;
  let legacy: Requester;
  beforeAll(async () => {
    [modern, legacy] = await Promise.all([open('modern', 'token-alice'), open('legacy', 'token-alice')]);
    expect([modern.client.getProtocolEra(), legacy.client.getProtocolEra()]).toEqual(['modern', 'legacy']);
    expect(legacy.session.capabilities).toMatchObject({ execution: true, cancellation: true });
  });

  const legacyGet = (id: string) => legacy.client.request({ method: 'tasks/get', params: { taskId: id } }, anyResult);
  const legacyResult = (id: string) => legacy.client.request({ method: 'tasks/result', params: { taskId: id } }, anyResult);

  it('a task created on 2025-11-25 is read by the 2026 requester', async () => {
    const { execution, id } = await startTask(legacy, 'export_ledger', { month: '2026-03', rows: 7 });
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('completed');
    expect(await modern.session.task(taskId(id)).snapshot()).toMatchObject({ taskId: id, status: 'completed' });
    const read = await modern.session.task(taskId(id)).result<CallToolResultV2>();
    expect(read.status === 'completed' && read.result.structuredContent).toMatchObject({ rows: 7 });
  });

  it('a task created on 2026-07-28 is read with 2025-11-25 tasks/get and tasks/result', async () => {
    const { execution, id } = await startTask(modern, 'export_ledger', { month: '2026-02', rows: 9 });
    await execution.settle();
    expect(await legacyGet(id)).toMatchObject({ taskId: id, status: 'completed' });
    const result = await legacyResult(id);
    expect(result).toMatchObject({ structuredContent: { rows: 9 }, _meta: { [RELATED_TASK]: { taskId: id } } });
  });

  it('an isError task reads failed on 2025-11-25 and completed on 2026-07-28', async () => {
    const { execution, id } = await startTask(modern, 'export_ledger', { month: '2026-13' });
    await execution.settle();
    expect(await legacyGet(id)).toMatchObject({ status: 'failed' });
    expect(await legacyResult(id)).toMatchObject({ isError: true, _meta: { [RELATED_TASK]: { taskId: id } } });
    expect((await modern.session.task(taskId(id)).snapshot()).status).toBe('completed');
  });
});

describe('the 2.x client in legacy mode on the same endpoint', () => {
  it('initializes on 2025-11-25, lists taskSupport and calls lookup', async () => {
    const { client } = await open('legacy', 'token-bob');
    expect(client.getProtocolEra()).toBe('legacy');
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    expect(support).toMatchObject({ export_ledger: 'required', summarize: 'optional' });
    const result = await client.callTool({ name: 'lookup', arguments: { account: 'cash' } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ account: 'cash' });
  });
});
