import { describe, expect, it } from 'vitest';
import { listTools } from '../../../src/runtime/requests/list-tools.js';
import { memoryRuntime } from './support.js';

/** Each listed tool as `name:taskSupport` (`-` without execution). */
async function shown(taskTools: boolean, clientTakesTasks: boolean): Promise<string[]> {
  const runtime = await memoryRuntime({ taskTools });
  try {
    return listTools(runtime, { clientTakesTasks }).tools.map((t) => `${t.name}:${t.execution?.taskSupport ?? '-'}`);
  } finally {
    await runtime.close();
  }
}

describe('listTools: one rule for what a client sees of the tools', () => {
  it('shows a client that takes tasks every execution as declared', async () => {
    expect(await shown(false, true)).toEqual(['report:required', 'either:optional', 'quick:-']);
    expect(await shown(true, true)).toEqual(['report:required', 'either:optional', 'quick:-', 'task_status:-', 'task_result:-', 'task_cancel:-']);
  });

  it('shows a client without tasks its required tools without execution only when the task tools answer such a call', async () => {
    expect(await shown(true, false)).toEqual(['report:-', 'either:optional', 'quick:-', 'task_status:-', 'task_result:-', 'task_cancel:-']);
    expect(await shown(false, false)).toEqual(['report:required', 'either:optional', 'quick:-']);
  });
});
