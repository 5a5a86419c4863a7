import { isPlausibleTaskId } from '../../service/input-bounds.js';

/**
 * Whether a task id could name a stored task at all. An id no store could hold (too long, a NUL,
 * an unpaired surrogate) is no one's task: each request answers it as unknown, without a lookup
 * and without an audit line. The one caller of `isPlausibleTaskId` on the requestor's side.
 */
export function couldBeTask(taskId: string): boolean {
  return isPlausibleTaskId(taskId);
}
