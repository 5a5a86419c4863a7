import { compareListOrder } from '../../core/read-rules.js';
import type { Millis, TaskRecord } from '../../core/types.js';
import type { OutboxEntry } from './memory-dispatch.js';

/** What the children role reads of the memory store. */
export interface MemoryChildrenState {
  readonly tasks: ReadonlyMap<string, TaskRecord>;
  readonly outbox: Map<string, OutboxEntry>;
}

/** The children of `taskId` for its own auth key, in list order (see `TaskChildren.childTasks`). */
export function childTasksIn(state: MemoryChildrenState, input: { authKey: string; taskId: string }): TaskRecord[] {
  return [...state.tasks.values()]
    .filter((r) => r.parentTaskId === input.taskId && r.authKey === input.authKey)
    .sort(compareListOrder)
    .map((r) => structuredClone(r));
}

/** The parent of `taskId` due at once when it waits without a run (see `TaskChildren.wakeParent`). */
export function wakeParentIn(state: MemoryChildrenState, input: { taskId: string; now: Millis }): string | null {
  const parentId = state.tasks.get(input.taskId)?.parentTaskId;
  if (parentId === undefined) return null;
  const parent = state.tasks.get(parentId);
  const entry = state.outbox.get(parentId);
  if (parent === undefined || entry === undefined || entry.doneAt !== null) return null;
  if (parent.status !== 'working' || parent.leaseOwner !== null || entry.availableAt <= input.now) return null;
  entry.availableAt = input.now;
  return parentId;
}
