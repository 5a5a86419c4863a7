import type { Millis, TaskRecord } from '../core/types.js';

/** What an admission says of a child task (`AdmitInput`). */
export interface ChildAdmit {
  /** The task whose handler starts this one (`ctx.step.runTool`); absent or null: none. */
  parentTaskId?: string | null;
}

/**
 * The children role: tasks a task's handler started (`ctx.step.runTool`), each admitted with its
 * parent's id (`AdmitInput.parentTaskId`, column `parent_task_id`). A principal's `list` leaves
 * children out; these two operations reach them from the parent.
 */
export interface TaskChildren {
  /**
   * The tasks `taskId` started, for the parent's own auth key (another key's id finds none), in
   * (createdAt, taskId) order, any status, expired ones too (a parent's view of its children).
   */
  childTasks(input: { authKey: string; taskId: string }): Promise<TaskRecord[]>;
  /**
   * The parent of `taskId` (a child that ended) made due at once: its open outbox entry becomes
   * available at `now` when the parent is working and no run holds it (a parent suspended on its
   * children). Returns the parent's id when it was woken, else null (no parent, the parent runs,
   * ended, or was due already). Only the due time moves: no version, no audit line.
   */
  wakeParent(input: { taskId: string; now: Millis }): Promise<string | null>;
}
