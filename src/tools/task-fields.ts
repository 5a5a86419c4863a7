import { formatTimestamp } from '../core/time.js';
import type { TaskRecord } from '../core/types.js';

/**
 * The flat Task fields of the 2025-11-25 spec, from a stored record: what `tasks/get` answers on
 * that wire and what the task tools put in `structuredContent` for clients without tasks.
 */
export function wireTask(record: TaskRecord): {
  taskId: string;
  status: TaskRecord['status'];
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttl: number | null;
  pollInterval?: number;
} {
  return {
    taskId: record.taskId,
    status: record.status,
    ...(record.statusMessage === null ? {} : { statusMessage: record.statusMessage }),
    createdAt: formatTimestamp(record.createdAt),
    lastUpdatedAt: formatTimestamp(record.lastUpdatedAt),
    ttl: record.ttl,
    ...(record.pollInterval === null ? {} : { pollInterval: record.pollInterval }),
  };
}
