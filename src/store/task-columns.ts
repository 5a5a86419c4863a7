/**
 * The columns of the \`tasks\` table, the same in every SQL dialect, in the order the migrations
 * create them: inserts, upserts and row mappings of both stores list them from here.
 */
export const TASK_COLUMNS = [
  'task_id',
  'auth_key',
  'tool_name',
  'status',
  'status_message',
  'version',
  'created_at_ms',
  'last_updated_at_ms',
  'ttl_ms',
  'expires_at_ms',
  'poll_interval_ms',
  'request_digest',
  'idempotency_key',
  'request',
  'cancel_requested',
  'result',
  'result_digest',
  'correlation_id',
  'attempt',
  'lease_owner',
  'lease_expires_at_ms',
  'app',
  'tool_digest',
  'tool_version',
  'parent_task_id',
] as const;
