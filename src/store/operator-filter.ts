import { authKeyOf } from '../core/principal.js';
import type { TaskFilter } from './task-operations.js';

/** How a dialect names the parts of `auth_key` in SQL. */
export interface FilterDialect {
  tenant: string;
  subject: string;
}

/**
 * The WHERE conditions of an operator's filter, for either SQL dialect: `param(value)` adds a
 * bound parameter and returns its placeholder. With both tenant and subject the auth key is
 * compared whole, so the (auth_key, created_at_ms, task_id) index serves it.
 */
export function filterConditions(filter: TaskFilter, dialect: FilterDialect, param: (value: unknown) => string): string[] {
  const where: string[] = [];
  if (filter.tenant !== undefined && filter.subject !== undefined)
    where.push(`auth_key = ${param(authKeyOf({ tenant: filter.tenant, subject: filter.subject }))}`);
  else if (filter.tenant !== undefined) where.push(`${dialect.tenant} = ${param(filter.tenant)}`);
  else if (filter.subject !== undefined) where.push(`${dialect.subject} = ${param(filter.subject)}`);
  if (filter.status !== undefined) where.push(`status = ${param(filter.status)}`);
  if (filter.app !== undefined) where.push(`app = ${param(filter.app)}`);
  if (filter.tool !== undefined) where.push(`tool_name = ${param(filter.tool)}`);
  if (filter.toolVersion !== undefined) where.push(`tool_version = ${param(filter.toolVersion)}`);
  if (filter.createdSince !== undefined) where.push(`created_at_ms >= ${param(filter.createdSince)}`);
  if (filter.createdBefore !== undefined) where.push(`created_at_ms < ${param(filter.createdBefore)}`);
  // A park mark on a working task (park-rules.ts); the partial index tasks_parked holds the few.
  if (filter.parentTaskId !== undefined) where.push(`parent_task_id = ${param(filter.parentTaskId)}`);
  if (filter.parked === true) where.push(`parked_at_ms IS NOT NULL AND status = 'working'`);
  // Journal rows still pending (a run passes a sleep to 'woke', ends a wait 'completed').
  if (filter.sleeping === true)
    where.push(`status = 'working' AND EXISTS (SELECT 1 FROM task_steps s WHERE s.task_id = tasks.task_id AND s.status IN ('sleeping', 'retrying'))`);
  if (filter.waitingForEvent === true)
    where.push(`status = 'working' AND EXISTS (SELECT 1 FROM task_steps s WHERE s.task_id = tasks.task_id AND s.kind = 'event' AND s.status = 'waiting')`);
  return where;
}
