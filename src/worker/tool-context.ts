import type { TaskRecord } from '../core/types.js';
import { principalOf } from '../tools/principal.js';
import type { ToolContext } from '../tools/tool.js';
import type { TaskRun } from './task-run.js';

/** Where a task's progress goes: the wire sessions that asked for it, wherever they are. */
export type ProgressSink = (record: TaskRecord, progress: number, total?: number, message?: string) => Promise<void>;

/** What a handler running as a task is given: its run's signal, fenced writes and checkpoint. */
export function taskToolContext(run: TaskRun, progress?: ProgressSink): ToolContext {
  const { record } = run;
  return {
    taskId: record.taskId,
    principal: principalOf(record.authKey),
    signal: run.signal,
    // The same for every attempt of the task: side effects named after it are idempotent.
    idempotencyKey: `task:${record.taskId}`,
    reportStatus: (message) => run.reportStatus(message),
    reportProgress: async (value, total, message) => {
      if (!run.signal.aborted) await progress?.(record, value, total, message);
    },
    checkpoint: () => run.checkpoint(),
  };
}
