import { dispatchSql } from './dispatch-statements.js';
import { inputSql } from './input-statements.js';
import { taskSql } from './task-statements.js';

/**
 * Every statement of the PostgreSQL store's roles by name (`sql.admitTask`, `sql.claimTasks`,
 * `sql.applyAsk`), gathered from the file of each role: task-statements.ts (records),
 * dispatch-statements.ts, input-statements.ts. The audit trail, the operator's reads, the
 * notifications and the step journal keep their SQL beside the code that runs it (audit.ts,
 * operations.ts, listener.ts, steps.ts). Names are unique across the roles, as in the SQLite store's map.
 */
export const sql = { ...taskSql, ...dispatchSql, ...inputSql } as const;
