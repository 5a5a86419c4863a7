import type { Millis } from '../core/types.js';

/**
 * A cancellation of one task (`TaskRecords.cancel`), named by its auth key and id. `byOperator`:
 * decided by the store's operator (the web console), not by the task's own principal: the audit
 * line keeps the task's auth key and says whose decision it was in its detail (`OPERATOR_DETAIL`).
 */
export interface CancelInput {
  authKey: string;
  taskId: string;
  now: Millis;
  correlationId: string;
  byOperator?: boolean;
}
