import { declaresTaskCalls, taskSupportOf } from './create-rules.js';
import type { TaskCapabilities, ToolDescriptor } from './types.js';

/**
 * How a `tools/call` asks for a task, in either protocol generation:
 * - `requested`: this call asks to become a task (2025-11-25: `params.task`); the caller chose.
 * - `accepted`: the caller can follow a task and leaves the choice to the server (2026-07-28:
 *   the tasks extension in this request's client capabilities).
 * - `none`: neither.
 */
export type TaskAsk = 'requested' | 'accepted' | 'none';

/** What decides whether one `tools/call` becomes a task. */
export interface CallModeInput {
  asks: TaskAsk;
  /**
   * Whether the client can follow a task at all (2025-11-25: its `tasks` client capability;
   * 2026-07-28: the extension, as `accepted`). Only read for the task-tools follow-up.
   */
  clientTakesTasks: boolean;
  /** The receiver's task capabilities: without `requests.tools.call` no call becomes a task. */
  capabilities: TaskCapabilities;
  tool: ToolDescriptor;
  /**
   * Whether the tool wants a task for these arguments (its `runsAsTask`; true without one, or
   * when the arguments do not parse). Read only when the server chooses (`accepted`, `optional`).
   */
  prefersTask: boolean;
  /** Whether the task tools are on (`RuntimeOptions.taskTools`): a client without tasks gets a `required` tool's task as text. */
  taskTools: boolean;
}

/**
 * What a call becomes: a task (`ADMIT`, answered as the task, or with `followUp` as text naming
 * it), a plain call run inline (`ACCEPT_NORMAL`; `BLOCK_CAPABILITY` where a task was asked of a
 * receiver that takes none, which the contract runs plainly), or a refusal. Every decision but
 * `ADMIT` is one of the create surface's (`CreateEntry`), and is audited as such.
 */
export type CallMode =
  | { decision: 'ADMIT'; runs: 'task'; followUp: boolean }
  | { decision: 'ACCEPT_NORMAL' | 'BLOCK_CAPABILITY'; runs: 'plain' }
  | { decision: 'BLOCK_TASK_REQUIRED' | 'BLOCK_TASK_FORBIDDEN'; runs: 'refused' };

/**
 * Whether one `tools/call` becomes a task, the same rule for both wires. A requested task is
 * create rules 1–4 (`decideCreateEntry` on an augmented request): capability, then
 * `forbidden`. Otherwise a `required` tool is refused, unless the task tools are on and the
 * client can take no task (then it is admitted and answered as text); where the server chooses
 * (`accepted`) an `optional` tool becomes a task unless it prefers a plain answer for these
 * arguments; everything else runs plainly.
 */
export function decideCallMode(input: CallModeInput): CallMode {
  const support = taskSupportOf(input.tool);
  const followUp = input.taskTools && !input.clientTakesTasks && support === 'required';
  if (input.asks === 'requested') {
    if (!declaresTaskCalls(input.capabilities)) return { decision: 'BLOCK_CAPABILITY', runs: 'plain' };
    if (support === 'forbidden') return { decision: 'BLOCK_TASK_FORBIDDEN', runs: 'refused' };
    return { decision: 'ADMIT', runs: 'task', followUp };
  }
  if (support === 'required') {
    if (input.asks === 'accepted' || followUp) return { decision: 'ADMIT', runs: 'task', followUp };
    return { decision: 'BLOCK_TASK_REQUIRED', runs: 'refused' };
  }
  if (input.asks === 'accepted' && support === 'optional' && input.prefersTask) return { decision: 'ADMIT', runs: 'task', followUp: false };
  return { decision: 'ACCEPT_NORMAL', runs: 'plain' };
}
