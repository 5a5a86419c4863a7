import type { TaskRecord } from '../core/types.js';

/** A task's place in its tree as `tasks show` prints it: its parent (null: a task of its own) and its children, one level. */
export interface TaskFamily {
  parentTaskId: string | null;
  children: Array<{ taskId: string; tool: string | null; status: string }>;
}

export function familyOf(record: TaskRecord, children: readonly TaskRecord[]): TaskFamily {
  return {
    parentTaskId: record.parentTaskId ?? null,
    children: children.map((c) => ({ taskId: c.taskId, tool: c.toolName, status: c.status })),
  };
}

/** The tree lines after a task's detail: nothing for a task with neither parent nor children. */
export function familyText(family: TaskFamily): string {
  const lines: string[] = [];
  if (family.parentTaskId !== null) lines.push(`parent      ${family.parentTaskId}`);
  if (family.children.length > 0) {
    lines.push(`children    ${family.children.length}`);
    for (const c of family.children) lines.push(`  └ ${c.taskId}  ${c.tool ?? '-'}  ${c.status}`);
  }
  return lines.length === 0 ? '' : `\n${lines.join('\n')}`;
}
