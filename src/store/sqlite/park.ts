import type { SqliteDatabase, SqliteStatement } from './driver.js';
import { TasklatchError } from '../../core/errors.js';
import { decidePark, parkWrite } from '../../core/park-rules.js';
import type { Millis } from '../../core/types.js';
import { auditLine } from '../audit-line.js';
import { parkMarkOf } from '../park-row.js';
import type { ParkedCount } from '../task-steps.js';
import type { ParkInput, ParkOutcome } from '../types.js';
import { auditToRow, rowToRecord, type TaskRow } from './row.js';
import type { Statements } from './statements.js';

/**
 * The park write and the parked-tasks count of the SQLite store (park-rules.ts). `parkIn` runs
 * inside the caller's `BEGIN IMMEDIATE` transaction: the row the rule judges is the one the
 * write changes.
 */

const parkSql = {
  selectTask: 'SELECT * FROM tasks WHERE task_id = ?',
  /**
   * The park, on the fence the rule just judged under the write lock (restates holdsFence on a
   * working task): version + 1, a first attempt again, no lease, the status message and the mark.
   */
  apply: `UPDATE tasks SET version = version + 1, last_updated_at_ms = @now, status_message = @status_message,
       attempt = 0, lease_owner = NULL, lease_expires_at_ms = NULL, parked_at_ms = @parked_at_ms, parks = @parks
     WHERE task_id = @task_id AND auth_key = @auth_key AND version = @version AND lease_owner = @owner AND status = 'working'
     RETURNING *`,
  /** The next applied step clears the mark: the run got past the point the task parked at. */
  unpark: 'UPDATE tasks SET parked_at_ms = NULL, parks = 0 WHERE task_id = ? AND parked_at_ms IS NOT NULL',
  /** Restates the parked-tasks gauge: working, unexpired, marked; by app and tool. */
  countParked: `SELECT app, tool_name, count(*) AS n FROM tasks
     WHERE parked_at_ms IS NOT NULL AND status = 'working' AND (expires_at_ms IS NULL OR expires_at_ms > @now)
     GROUP BY app, tool_name ORDER BY app, coalesce(tool_name, '')`,
} as const;

export type ParkStatements = { readonly [K in keyof typeof parkSql]: SqliteStatement };

export function prepareParkStatements(db: SqliteDatabase): ParkStatements {
  return Object.fromEntries(Object.entries(parkSql).map(([name, text]) => [name, db.prepare(text)] as const)) as ParkStatements;
}

export function parkIn(sql: Statements, park: ParkStatements, input: ParkInput): ParkOutcome {
  const { fence, now } = input;
  const row = park.selectTask.get(fence.taskId) as TaskRow | undefined;
  const task = row === undefined ? null : rowToRecord(row);
  const decision = decidePark({ record: task, fence, now });
  let record = task !== null && task.authKey === fence.authKey ? task : null;
  let parked: ParkOutcome['parked'] = null;
  if (decision === 'APPLY_PARK' && row !== undefined) {
    const write = parkWrite({ mark: parkMarkOf(row), reason: input.reason, now });
    const params = { task_id: fence.taskId, auth_key: fence.authKey, version: fence.version, owner: fence.owner, now };
    const applied = park.apply.get(
      Object.assign(params, { status_message: write.statusMessage, parked_at_ms: write.mark.parkedAt, parks: write.mark.parks }),
    ) as TaskRow | undefined;
    if (applied === undefined) throw new TasklatchError('INTERNAL', `task ${JSON.stringify(fence.taskId)} changed under the write lock of its park`);
    record = rowToRecord(applied);
    // Due at the wake time, not before: no claim walk offers it until then.
    sql.moveOutboxEntry.run({ task_id: fence.taskId, available_at_ms: write.wakeAt, lease_expires_at_ms: null });
    parked = Object.assign({ wakeAt: write.wakeAt }, write.mark);
  }
  const detail = parked === null ? null : `parked ${parked.parks}`;
  const line = auditLine({
    at: now,
    surface: 'step',
    decision,
    authKey: fence.authKey,
    taskId: fence.taskId,
    correlationId: input.correlationId,
    record,
    detail,
  });
  sql.insertAudit.run(auditToRow(line));
  return { decision, record, parked };
}

export function parkedIn(park: ParkStatements, now: Millis): ParkedCount[] {
  const rows = park.countParked.all({ now }) as Array<{ app: string; tool_name: string | null; n: number }>;
  return rows.map((r) => ({ app: r.app, tool: r.tool_name, count: r.n }));
}
