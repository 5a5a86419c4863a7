import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { TaskRecord } from '../../src/core/types.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { awaitTaskResult } from '../../src/service/result-wait.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { defineTool } from '../../src/tools/tool.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { until } from '../support/until.js';

const AUTH = 'acme/alice';
const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** Each call waits until the test opens its gate, by the month it was given. */
const gates = new Map<string, () => void>();
const gated = defineTool({
  name: 'gated_report',
  description: 'ends when the test says so',
  inputSchema: z.object({ month: z.string() }),
  execution: { taskSupport: 'required' },
  handler: async ({ month }) => {
    await new Promise<void>((resolve) => gates.set(month, resolve));
    return { content: [{ type: 'text', text: `report of ${month}` }] };
  },
});

async function admit(runtime: TaskRuntime, month: string): Promise<string> {
  const created = await createTask(runtime.guard, {
    auth: AUTH,
    tool: { name: 'gated_report', execution: { taskSupport: 'required' } },
    request: { method: 'tools/call', params: { name: 'gated_report', arguments: { month }, task: {} } },
  });
  return created.record!.taskId;
}

describe('terminal records on PostgreSQL, from a process that runs its tasks', () => {
  it("travel for a task no one there waits on (its run's own watch ends before the write), and stay home for one a requestor there waits on", async () => {
    const url = await freshPostgresUrl('records_worker');
    const store = await PostgresStore.open(url, { poolSize: 4 });
    const runtime = createRuntime({ store, tools: [gated], callersIdentified: true, execute: true, logger: createLogger('silent') });
    await runtime.start();
    closing.push(
      () => store.close(),
      () => runtime.close(),
    );
    // Another process's listener: what it hears of each task, and the record that came with it.
    const other = await PostgresStore.open(url, { poolSize: 2 });
    const heard = new Map<string, TaskRecord | null>();
    const stop = await other.listen((taskId, _version, record) => {
      if (taskId !== null && record !== undefined) heard.set(taskId, record);
      else if (taskId !== null && !heard.has(taskId)) heard.set(taskId, null);
    });
    closing.push(() => other.close(), stop);

    const alone = await admit(runtime, 'alone');
    const waited = await admit(runtime, 'waited');
    const result = awaitTaskResult(runtime.guard, { auth: AUTH, taskId: waited });
    await until(() => (gates.has('alone') && gates.has('waited') && runtime.guard.context.changes.watched(waited) ? true : undefined));
    gates.get('alone')!();
    gates.get('waited')!();
    expect((await result).decision).toBe('RETURN_RESULT');
    const sealed = await until(() => heard.get(alone) ?? undefined);
    expect(sealed).toMatchObject({ taskId: alone, status: 'completed', result: { content: [{ type: 'text', text: 'report of alone' }] } });
    await until(() => (heard.has(waited) ? true : undefined));
    expect(heard.get(waited)).toBeNull();
  });
});
