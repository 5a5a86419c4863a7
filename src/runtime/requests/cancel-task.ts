import type { TaskRecord } from '../../core/types.js';
import type { RequestHost } from './host.js';
import { couldBeTask } from './task-id.js';
import { requestSpan, traced } from '../../trace/request-span.js';

export interface CancelTaskRequest {
  auth: string;
  taskId: string;
  correlationId?: string;
}

/**
 * What a `tasks/cancel` came to:
 * - `cancelled`: the cancellation is stored (before this resolves); `record` is the task now.
 * - `terminal`: the task had already ended; `record` says how.
 * - `not-found`: unknown, another caller's, expired or implausible alike.
 * - `not-supported`: this receiver does not cancel (no `tasks.cancel` capability; audited).
 */
export type CancelTaskResult =
  { kind: 'cancelled'; record: TaskRecord } | { kind: 'terminal'; record: TaskRecord } | { kind: 'not-found' } | { kind: 'not-supported' };

/**
 * `tasks/cancel`: latched in one store write through the guard (which audits it). A handler
 * running in this process is stopped at once; one running elsewhere hears it through the change
 * feed or its next heartbeat.
 */
export function cancelTask(host: Pick<RequestHost, 'guard' | 'stopRun'>, request: CancelTaskRequest): Promise<CancelTaskResult> {
  return traced(requestSpan('tasks/cancel', undefined, request.taskId), undefined, latchCancel, host, request);
}

async function latchCancel(host: Pick<RequestHost, 'guard' | 'stopRun'>, request: CancelTaskRequest): Promise<CancelTaskResult> {
  if (!couldBeTask(request.taskId)) return { kind: 'not-found' };
  const out = await host.guard.requestor.cancel(request);
  switch (out.decision) {
    case 'BLOCK_CAPABILITY':
      return { kind: 'not-supported' };
    case 'CANCEL_TASK':
      host.stopRun(out.record.taskId);
      return { kind: 'cancelled', record: out.record };
    case 'ALREADY_TERMINAL':
      return { kind: 'terminal', record: out.record };
    default:
      return { kind: 'not-found' };
  }
}
