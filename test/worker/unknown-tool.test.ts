import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { ClaimInput } from '../../src/store/types.js';
import { createRuntime } from '../../src/runtime/task-runtime.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { until } from '../support/until.js';

const AUTH = 'acme/alice';

/** Records the tool filter of every claim. */
class WatchedStore extends MemoryStore {
  readonly seenFilters: Array<readonly string[] | undefined> = [];
  override claim(input: ClaimInput) {
    this.seenFilters.push(input.tools);
    return super.claim(input);
  }
}

const tool = (name: string) =>
  defineTool({
    name,
    description: name,
    inputSchema: z.object({}),
    execution: { taskSupport: 'required' },
    handler: async () => ({ content: [{ type: 'text', text: `${name} ran` }] }),
  }) as unknown as TaskTool;

describe('a worker and a task of a tool it does not know', () => {
  it('names its tools in every claim and leaves a task of another tool untouched for a worker that knows it', async () => {
    const store = new WatchedStore();
    const admitting = createRuntime({ store, tools: [tool('theirs')], execute: false });
    const created = await admitting.guard.requestor.create({
      auth: AUTH,
      tool: { name: 'theirs', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 'theirs', arguments: {}, task: {} } },
    });
    const taskId = created.record!.taskId;
    const mine = createRuntime({ store, tools: [tool('mine'), tool('also_mine')], worker: { pollMs: 10 } });
    await mine.start();
    await until(() => (store.seenFilters.length >= 5 ? true : undefined));
    await mine.close();
    expect(new Set(store.seenFilters.map((f) => JSON.stringify(f)))).toEqual(new Set([JSON.stringify(['mine', 'also_mine'])]));
    // Five claims later the task is as admitted: not failed, never leased, no attempt counted.
    expect((await store.get({ authKey: AUTH, taskId, now: Date.now() })).record).toMatchObject({ status: 'working', attempt: 0, leaseOwner: null });
    const theirs = createRuntime({ store, tools: [tool('theirs')], worker: { pollMs: 10 } });
    await theirs.start();
    await until(async () => ((await store.get({ authKey: AUTH, taskId, now: Date.now() })).record?.status === 'completed' ? true : undefined));
    await theirs.close();
  });
});
