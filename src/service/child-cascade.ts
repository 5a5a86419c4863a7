import { isTerminal, type TaskRecord } from '../core/types.js';
import type { CancelTaskOutcome } from './outcomes.js';
import type { GuardContext } from './guard-context.js';

/**
 * A cancelled parent's children that still run, cancelled in turn through `cancel` (the guard's
 * own cancellation, so each child's cancel is decided, audited and published as any): after the
 * parent's cancel, and again on a cancel of a parent already cancelled (a cascade a crash cut
 * short is finished by the next cancel). Grandchildren follow through the same call. One child
 * that cannot be cancelled (the store down) stops the cascade with its error.
 */
export async function cancelChildren(
  ctx: Pick<GuardContext, 'store' | 'timed' | 'started'>,
  parent: Pick<TaskRecord, 'taskId' | 'authKey' | 'status'>,
  cancel: (input: { auth: string; taskId: string; correlationId?: string }) => Promise<CancelTaskOutcome>,
  correlationId: string,
): Promise<void> {
  if (parent.status !== 'cancelled') return;
  const children = await ctx.timed('childTasks', ctx.started(), ctx.store.childTasks({ authKey: parent.authKey, taskId: parent.taskId }));
  for (const child of children) {
    if (!isTerminal(child.status)) await cancel({ auth: parent.authKey, taskId: child.taskId, correlationId });
  }
}
