import { describe, expect, it } from 'vitest';
import { decideCallMode, type CallMode, type CallModeInput, type TaskAsk } from '../../src/core/call-rules.js';
import { decideCreateEntry } from '../../src/core/create-rules.js';
import type { TaskCapabilities, TaskSupport, ToolDescriptor } from '../../src/core/types.js';
import { ALL_CAPS } from '../support/records.js';

const tool = (support?: TaskSupport): ToolDescriptor => (support === undefined ? { name: 't' } : { name: 't', execution: { taskSupport: support } });
const NO_TASK_CALLS: TaskCapabilities = { list: {}, cancel: {} };

const base: CallModeInput = { asks: 'none', clientTakesTasks: false, capabilities: ALL_CAPS, tool: tool('optional'), prefersTask: true, taskTools: false };

const task = (followUp = false): CallMode => ({ decision: 'ADMIT', runs: 'task', followUp });
const plain: CallMode = { decision: 'ACCEPT_NORMAL', runs: 'plain' };

interface Row {
  name: string;
  given: Partial<CallModeInput>;
  expect: CallMode;
}

const rows: Row[] = [
  // 2025-11-25: the caller chooses (`params.task`); create rules 1–4.
  { name: 'requested, optional', given: { asks: 'requested', clientTakesTasks: true }, expect: task() },
  { name: 'requested, required', given: { asks: 'requested', clientTakesTasks: true, tool: tool('required') }, expect: task() },
  {
    name: 'requested of a receiver without task calls runs plainly',
    given: { asks: 'requested', capabilities: NO_TASK_CALLS, tool: tool('forbidden') },
    expect: { decision: 'BLOCK_CAPABILITY', runs: 'plain' },
  },
  {
    name: 'requested, forbidden',
    given: { asks: 'requested', clientTakesTasks: true, tool: tool('forbidden') },
    expect: { decision: 'BLOCK_TASK_FORBIDDEN', runs: 'refused' },
  },
  { name: 'requested, no execution at all', given: { asks: 'requested', tool: tool() }, expect: { decision: 'BLOCK_TASK_FORBIDDEN', runs: 'refused' } },
  { name: 'requested: the tool prefers nothing here', given: { asks: 'requested', prefersTask: false }, expect: task() },
  { name: 'not requested, optional', given: { asks: 'none', clientTakesTasks: true }, expect: plain },
  { name: 'not requested, forbidden', given: { asks: 'none', tool: tool('forbidden') }, expect: plain },
  {
    name: 'not requested, required, from a client that takes tasks',
    given: { asks: 'none', clientTakesTasks: true, tool: tool('required'), taskTools: true },
    expect: { decision: 'BLOCK_TASK_REQUIRED', runs: 'refused' },
  },
  {
    name: 'not requested, required, task tools off',
    given: { asks: 'none', tool: tool('required') },
    expect: { decision: 'BLOCK_TASK_REQUIRED', runs: 'refused' },
  },
  // The task tools: a client that takes no task gets a `required` tool's task as text.
  { name: 'follow-up of a required tool', given: { asks: 'none', tool: tool('required'), taskTools: true }, expect: task(true) },
  { name: 'follow-up even when params.task was sent', given: { asks: 'requested', tool: tool('required'), taskTools: true }, expect: task(true) },
  { name: 'no follow-up for an optional tool', given: { asks: 'none', taskTools: true }, expect: plain },
  // 2026-07-28: the server chooses when the request declares the extension.
  { name: 'accepted, required', given: { asks: 'accepted', clientTakesTasks: true, tool: tool('required'), taskTools: true }, expect: task() },
  { name: 'accepted, optional, preferring a task', given: { asks: 'accepted', clientTakesTasks: true }, expect: task() },
  { name: 'accepted, optional, quick for these arguments', given: { asks: 'accepted', clientTakesTasks: true, prefersTask: false }, expect: plain },
  { name: 'accepted, forbidden runs plainly, never refused', given: { asks: 'accepted', clientTakesTasks: true, tool: tool('forbidden') }, expect: plain },
  { name: 'accepted, no execution', given: { asks: 'accepted', clientTakesTasks: true, tool: tool() }, expect: plain },
  { name: 'without the extension, optional', given: { asks: 'none' }, expect: plain },
  { name: 'without the extension, required', given: { asks: 'none', tool: tool('required') }, expect: { decision: 'BLOCK_TASK_REQUIRED', runs: 'refused' } },
];

describe('decideCallMode', () => {
  it.each(rows)('$name', ({ given, expect: expected }) => {
    expect(decideCallMode({ ...base, ...given })).toEqual(expected);
  });

  // Without the task tools, a call that asks (`requested`) or does not (`none`) is decided exactly
  // as create rules 1–4 decide the same request with or without `params.task`.
  const asks: TaskAsk[] = ['requested', 'none'];
  const supports: Array<TaskSupport | undefined> = ['required', 'optional', 'forbidden', undefined];
  const capabilities: TaskCapabilities[] = [ALL_CAPS, NO_TASK_CALLS, {}];
  const grid = asks.flatMap((a) => supports.flatMap((s) => capabilities.flatMap((c) => [true, false].map((p) => ({ a, s, c, p })))));
  it.each(grid)('agrees with decideCreateEntry: asks $a, taskSupport $s, capabilities $c, prefersTask $p', ({ a, s, c, p }) => {
    const params = a === 'requested' ? { name: 't', task: {} } : { name: 't' };
    const entry = decideCreateEntry({ capabilities: c, tool: tool(s), request: { method: 'tools/call', params } });
    const mode = decideCallMode({ asks: a, clientTakesTasks: true, capabilities: c, tool: tool(s), prefersTask: p, taskTools: false });
    expect(mode.decision).toBe(entry);
  });
});
