import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { TasklatchError } from '../../../src/core/errors.js';
import { META_KEYS } from '../../../src/core/meta-keys.js';
import type { WireRequest } from '../../../src/core/types.js';
import { callTool, type ToolCall } from '../../../src/runtime/requests/call-tool.js';
import { createTask } from '../../../src/runtime/requests/create-task.js';
import { createLogger } from '../../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../../src/runtime/task-runtime.js';
import { openGuard } from '../../../src/service/guard.js';
import type { TaskLimits } from '../../../src/service/limits.js';
import { MemoryStore } from '../../../src/store/memory/memory-store.js';
import { defineTool, type TaskTool, type ToolContext } from '../../../src/tools/tool.js';
import { ALL_CAPS } from '../../support/records.js';

// The admission of a `tools/call` orders its own steps in the request (`callTool`): bounds, tool,
// mode, the two idempotency keys agree, `prepare` with the call's context, the stored request's
// byte bound, then the guard's admission. A step that refuses leaves nothing stored and no audit
// line; a call that stores no task is recorded by `recordCall` with its decision.

const ALICE = { tenant: 'acme', subject: 'alice' };
const KEY = 'io.tasklatch/idempotency-key';
const runtimes: TaskRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close(50)));
});

/** What `prepare` does for `args.how`: return a little, return too much, throw, refuse the input. */
const prepared = defineTool({
  name: 'prepared',
  description: 'a task whose prepare is told what to do',
  inputSchema: z.object({ how: z.enum(['small', 'large', 'throws', 'invalid']) }),
  execution: { taskSupport: 'required' },
  prepare: async (args) => {
    if (args.how === 'throws') throw new Error('prepare failed');
    if (args.how === 'invalid') throw new TasklatchError('INVALID_INPUT', 'prepare refused the input');
    return { blob: args.how === 'large' ? 'x'.repeat(2000) : 'x' };
  },
  handler: async () => ({ content: [] }),
}) as unknown as TaskTool;

const plain = defineTool({
  name: 'plain',
  description: 'never a task',
  inputSchema: z.object({}),
  handler: async () => ({ content: [{ type: 'text', text: 'done' }] }),
}) as unknown as TaskTool;

function start(limits: Partial<TaskLimits> = {}) {
  const store = new MemoryStore();
  const runtime = createRuntime({ store, tools: [prepared, plain], execute: false, logger: createLogger('silent'), sweepIntervalMs: 0, limits });
  runtimes.push(runtime);
  const storeAdmit = vi.spyOn(store, 'admit');
  const audited = vi.spyOn(store, 'recordDecision');
  const recordCall = vi.spyOn(runtime.guard.requestor, 'recordCall');
  const admit = vi.spyOn(runtime.guard.requestor, 'admit');
  return { runtime, store, storeAdmit, audited, recordCall, admit };
}

const context = (): ToolContext => ({ principal: ALICE }) as unknown as ToolContext;

const call = (params: Record<string, unknown>, over: Partial<ToolCall> = {}): ToolCall => ({
  principal: ALICE,
  params,
  headerKey: null,
  asks: 'accepted',
  clientTakesTasks: true,
  context,
  ...over,
});

describe('the admission of a tools/call, step by step', () => {
  it('admits the prepared request under the agreed key: what prepare returned in _meta, the header key when _meta has none', async () => {
    const { runtime, admit } = start();
    const out = await callTool(runtime, call({ name: 'prepared', arguments: { how: 'small' } }, { headerKey: 'k-1' }));
    expect(out).toMatchObject({ kind: 'task', decision: 'ACCEPT_TASK' });
    expect(admit).toHaveBeenCalledTimes(1);
    const [input] = admit.mock.calls[0]!;
    expect(input).toMatchObject({ auth: 'acme/alice', tool: 'prepared', idempotencyKey: 'k-1' });
    expect(input.request.params._meta).toEqual({ [META_KEYS.prepared]: { blob: 'x' } });
  });

  it('a prepare that throws leaves nothing stored and no audit line, and its error goes on', async () => {
    const { runtime, storeAdmit, audited, recordCall } = start();
    await expect(callTool(runtime, call({ name: 'prepared', arguments: { how: 'throws' } }))).rejects.toThrow('prepare failed');
    expect(storeAdmit).not.toHaveBeenCalled();
    expect(audited).not.toHaveBeenCalled();
    expect(recordCall).not.toHaveBeenCalled();
    expect(await runtime.guard.context.store.pendingDispatch()).toBe(0);
  });

  it('a prepare that refuses the input answers invalid, with nothing stored', async () => {
    const { runtime, storeAdmit, audited } = start();
    const out = await callTool(runtime, call({ name: 'prepared', arguments: { how: 'invalid' } }));
    expect(out).toEqual({ kind: 'invalid', message: 'prepare refused the input' });
    expect(storeAdmit).not.toHaveBeenCalled();
    expect(audited).not.toHaveBeenCalled();
  });

  it('refuses a prepared request over maxRequestBytes before the store, after prepare ran', async () => {
    const { runtime, storeAdmit, audited, admit } = start({ maxRequestBytes: 1000 });
    const out = await callTool(runtime, call({ name: 'prepared', arguments: { how: 'large' } }));
    expect(out).toEqual({ kind: 'invalid', message: expect.stringMatching(/^the request is \d+ bytes as stored; at most 1000 bytes are kept$/) as unknown });
    expect(admit).not.toHaveBeenCalled();
    expect(storeAdmit).not.toHaveBeenCalled();
    expect(audited).not.toHaveBeenCalled();
    // The same arguments with a small answer of prepare fit.
    expect(await callTool(runtime, call({ name: 'prepared', arguments: { how: 'small' } }))).toMatchObject({ kind: 'task' });
  });

  it('checks that the two keys agree before prepare and before any context is made', async () => {
    const { runtime, storeAdmit, audited } = start();
    let contexts = 0;
    const out = await callTool(
      runtime,
      call({ name: 'prepared', arguments: { how: 'throws' }, _meta: { [KEY]: 'a' } }, { headerKey: 'b', context: () => (contexts++, context()) }),
    );
    // A prepare that throws was never reached: the keys ended the call first.
    expect(out).toEqual({ kind: 'invalid', message: 'the Idempotency-Key header and _meta idempotency key differ' });
    expect(contexts).toBe(0);
    expect(storeAdmit).not.toHaveBeenCalled();
    expect(audited).not.toHaveBeenCalled();
  });

  it('records a refused call with recordCall and its decision, and admits nothing', async () => {
    const { runtime, recordCall, admit, storeAdmit } = start();
    const out = await callTool(runtime, call({ name: 'prepared', arguments: { how: 'small' } }, { asks: 'none', clientTakesTasks: false }));
    expect(out).toMatchObject({ kind: 'refused', decision: 'BLOCK_TASK_REQUIRED' });
    expect(recordCall.mock.calls).toEqual([[{ auth: 'acme/alice', tool: 'prepared', decision: 'BLOCK_TASK_REQUIRED' }]]);
    expect(admit).not.toHaveBeenCalled();
    expect(storeAdmit).not.toHaveBeenCalled();
  });

  it('records a plain call with recordCall once its context is made, and not when making it fails', async () => {
    const { runtime, recordCall, admit } = start();
    const out = await callTool(runtime, call({ name: 'plain', arguments: {} }, { asks: 'none' }));
    expect(out).toMatchObject({ kind: 'result', decision: 'ACCEPT_NORMAL' });
    expect(recordCall.mock.calls).toEqual([[{ auth: 'acme/alice', tool: 'plain', decision: 'ACCEPT_NORMAL' }]]);
    const failing = () => Promise.reject(new Error('no context'));
    await expect(callTool(runtime, call({ name: 'plain', arguments: {} }, { asks: 'none', context: failing }))).rejects.toThrow('no context');
    expect(recordCall).toHaveBeenCalledTimes(1);
    expect(admit).not.toHaveBeenCalled();
  });
});

describe('createTask: create rules 1–4 from the request alone', () => {
  const tool = { name: 'export_ledger', execution: { taskSupport: 'required' as const } };
  const request = (params: Record<string, unknown>): WireRequest => ({
    method: 'tools/call',
    params: Object.assign({ name: 'export_ledger', arguments: {} }, params),
  });

  function guardOn(limits: Partial<TaskLimits> = {}) {
    const store = new MemoryStore();
    const guard = openGuard({ store, capabilities: ALL_CAPS, limits });
    return { guard, storeAdmit: vi.spyOn(store, 'admit'), recordCall: vi.spyOn(guard.requestor, 'recordCall') };
  }

  it('records a decision that stores no task, and admits a task call', async () => {
    const { guard, storeAdmit, recordCall } = guardOn();
    expect(await createTask(guard, { auth: 'a', tool, request: request({}) })).toEqual({ decision: 'BLOCK_TASK_REQUIRED', record: null });
    expect(recordCall).toHaveBeenCalledWith(expect.objectContaining({ auth: 'a', tool: 'export_ledger', decision: 'BLOCK_TASK_REQUIRED' }));
    expect(storeAdmit).not.toHaveBeenCalled();
    const created = await createTask(guard, { auth: 'a', tool, request: request({ task: {} }), idempotencyKey: 'k' });
    expect(created).toMatchObject({ decision: 'ACCEPT_TASK', record: { idempotencyKey: 'k' } });
  });

  it('refuses keys that differ and a request over the bound with INVALID_INPUT, before the store', async () => {
    const { guard, storeAdmit } = guardOn({ maxRequestBytes: 100 });
    await expect(createTask(guard, { auth: 'a', tool, request: request({ task: {}, _meta: { [KEY]: 'x' } }), idempotencyKey: 'y' })).rejects.toThrow(
      'the Idempotency-Key header and _meta idempotency key differ',
    );
    await expect(createTask(guard, { auth: 'a', tool, request: request({ task: {}, arguments: { blob: 'x'.repeat(200) } }) })).rejects.toThrow(
      /^the request is \d+ bytes as stored; at most 100 bytes are kept$/,
    );
    expect(storeAdmit).not.toHaveBeenCalled();
  });
});
