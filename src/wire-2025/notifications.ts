import { watchTasks, type TaskWatch } from '../runtime/requests/watch-tasks.js';
import { wireTask } from './encode.js';
import type { SessionContext } from './session.js';

/**
 * `notifications/tasks/status` to this session on every later version of a task it created
 * (the spec's MAY: requestors keep polling). What changed and when is the request layer's
 * status watch (`watchTasks`); this encodes each record as the full Task.
 * The watch stops at a terminal status, when the task goes out of reach, or with the session.
 */
export function watchStatus(session: SessionContext, taskId: string, auth: string, createdVersion: number): void {
  let watch: TaskWatch | null = null;
  const stop = () => {
    watch?.stop();
    session.watches.delete(taskId);
    session.progressTokens.delete(taskId);
  };
  // No AbortSignal: one per task call costs an event target, and its abort an exception.
  watch = watchTasks(session.server.runtime, {
    auth,
    taskIds: [taskId],
    // The requestor has the task as created; only later versions are news.
    seen: createdVersion,
    onRecord: (record) => session.sdk.notification({ method: 'notifications/tasks/status', params: wireTask(record) }),
    onDone: stop,
  });
  session.watches.set(taskId, stop);
}
