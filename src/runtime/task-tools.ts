import { z } from 'zod';
import { authKeyOf } from '../core/principal.js';
import { isTerminal, type TaskRecord } from '../core/types.js';
import { errorResult } from '../tools/invoke-tool.js';
import { isStoredError } from '../tools/protocol-error.js';
import { wireTask } from '../tools/task-views.js';
import { defineTool, type TaskTool, type ToolResult } from '../tools/tool.js';
import { peekResult } from './requests/await-result.js';
import { cancelTask } from './requests/cancel-task.js';
import { getTask } from './requests/get-task.js';
import type { RequestHost } from './requests/host.js';

/** The names of the task tools, in the order `tools/list` shows them. */
export const TASK_TOOL_NAMES = ['task_status', 'task_result', 'task_cancel'] as const;

/** What the task tools need of the runtime: the guard, and how a cancelled task's local handler is stopped. */
export type TaskToolsHost = Pick<RequestHost, 'guard' | 'stopRun'>;

const byId = z.object({ taskId: z.string().min(1).max(256).describe('The task id a task-required tool answered with') });

/**
 * The answer to a client without task support that called a `required` tool: the task was
 * admitted like any other, and the text tells the model how to follow it with the task tools.
 */
export function taskFollowUp(record: TaskRecord): ToolResult {
  const { taskId } = record;
  const seconds = Math.max(1, Math.round((record.pollInterval ?? 1000) / 1000));
  return {
    content: [
      {
        type: 'text',
        text:
          `Started task ${taskId} (${record.status}); it runs in the background. ` +
          `Call task_status with {"taskId":"${taskId}"} every ${seconds} s or so until it is completed, failed or cancelled, ` +
          `then task_result with {"taskId":"${taskId}"} for its result; task_cancel with {"taskId":"${taskId}"} stops it.`,
      },
    ],
    structuredContent: wireTask(record),
  };
}

/**
 * `task_status`, `task_result` and `task_cancel`: plain tools that read and cancel the caller's
 * own tasks through the same guard as `tasks/get`, `tasks/result` and `tasks/cancel` (auth key
 * in every query; unknown, foreign and expired ids answer alike), for models whose host speaks
 * no tasks. `task_result` never holds the call: an unfinished task answers with its status.
 */
export function taskTools(host: TaskToolsHost): TaskTool[] {
  const notFound = (taskId: string) => errorResult(`Task ${taskId} not found`);
  const status = defineTool({
    name: 'task_status',
    description: 'The status of a task started by a task-required tool: working, input_required, completed, failed or cancelled',
    inputSchema: byId,
    async handler({ taskId }, ctx) {
      const out = await getTask(host, { auth: authKeyOf(ctx.principal), taskId });
      if (out.kind === 'not-found') return notFound(taskId);
      return { content: [{ type: 'text', text: statusText(out.record) }], structuredContent: wireTask(out.record) };
    },
  });
  const result = defineTool({
    name: 'task_result',
    description: 'The result of a finished task; for an unfinished one, its status (call again later)',
    inputSchema: byId,
    async handler({ taskId }, ctx) {
      const out = await peekResult(host, { auth: authKeyOf(ctx.principal), taskId });
      if (out.kind === 'not-found') return notFound(taskId);
      const { record } = out;
      if (out.kind === 'running') return { content: [{ type: 'text', text: `${statusText(record)} No result yet.` }], structuredContent: wireTask(record) };
      if (record.status === 'cancelled') return errorResult(`Task ${taskId} was cancelled`);
      if (isStoredError(record.result)) return errorResult(`Task ${taskId} failed: ${record.result.error.message}`);
      if (record.result === null || typeof record.result !== 'object') return errorResult(`Task ${taskId} ${record.status} without a result`);
      return record.result as ToolResult;
    },
  });
  const cancel = defineTool({
    name: 'task_cancel',
    description: 'Cancels an unfinished task',
    inputSchema: byId,
    async handler({ taskId }, ctx) {
      const out = await cancelTask(host, { auth: authKeyOf(ctx.principal), taskId });
      if (out.kind === 'not-found' || out.kind === 'not-supported') return notFound(taskId);
      if (out.kind === 'terminal') return errorResult(`Task ${taskId} is already ${out.record.status} and cannot be cancelled`);
      return { content: [{ type: 'text', text: `Task ${taskId} is cancelled.` }], structuredContent: wireTask(out.record) };
    },
  });
  return [status, result, cancel];
}

function statusText(record: TaskRecord): string {
  const message = record.statusMessage === null ? '' : ` (${record.statusMessage})`;
  const next = isTerminal(record.status) ? ' Call task_result for its outcome.' : record.status === 'input_required' ? ' It waits for input.' : '';
  return `Task ${record.taskId} is ${record.status}${message}.${next}`;
}
