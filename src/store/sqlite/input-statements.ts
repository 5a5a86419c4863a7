import { NON_TERMINAL, UNEXPIRED } from './predicates.js';

/**
 * The statements of the input role in SQLite: ask, answer, the questions of a task, their
 * deadlines.
 */

const INPUT_COLUMN_NAMES = [
  'task_id',
  'input_key',
  'ask_seq',
  'request',
  'request_digest',
  'asked_at_ms',
  'response',
  'response_digest',
  'answered_at_ms',
  'deadline_ms',
  'position',
] as const;
const INPUT_COLUMNS = [...INPUT_COLUMN_NAMES, 'input_ordinal'].join(', ');
const INPUT_VALUES = [...INPUT_COLUMN_NAMES.map((c) => `@${c}`), 'coalesce(max(input_ordinal) + 1, 0)'].join(', ');
const INPUT_UPSERT_SET = INPUT_COLUMN_NAMES.filter((c) => c !== 'task_id' && c !== 'input_key')
  .map((c) => `${c} = excluded.${c}`)
  .join(', ');

/** The input role's statements, by name. */
export const inputSql = {
  /**
   * The ask's one conditional write, restating decideAsk's APPLY_ASK: the asker's fence (holdsFence)
   * on a `working` task, and none of `@keys` (a JSON array) asked before.
   */
  applyAsk: `UPDATE tasks SET status = 'input_required', version = version + 1, last_updated_at_ms = @now, parked_at_ms = NULL, parks = 0
     WHERE task_id = @task_id AND auth_key = @auth_key AND version = @version AND lease_owner = @owner
       AND status = 'working' AND ${UNEXPIRED}
       AND NOT EXISTS (SELECT 1 FROM task_inputs WHERE task_id = @task_id AND input_key IN (SELECT value FROM json_each(@keys)))
     RETURNING *`,
  /** A question after the task's others (the aggregate gives one row, ordinal 0 for the first). */
  insertInput: `INSERT INTO task_inputs (${INPUT_COLUMNS})
     SELECT ${INPUT_VALUES} FROM task_inputs WHERE task_id = @task_id`,
  /** Seeding: a question as it is; one already stored keeps its place. */
  upsertInput: `INSERT INTO task_inputs (${INPUT_COLUMNS})
     SELECT ${INPUT_VALUES} FROM task_inputs WHERE task_id = @task_id
     ON CONFLICT (task_id, input_key) DO UPDATE SET ${INPUT_UPSERT_SET}`,
  selectInputKeys: 'SELECT input_key FROM task_inputs WHERE task_id = ?',
  /** A task's questions in ask order, then the order asked within one ask. */
  selectInputs: 'SELECT * FROM task_inputs WHERE task_id = ? ORDER BY ask_seq, input_ordinal',
  /** One answer, only to a question still outstanding (decideAnswer's APPLY_ANSWER). */
  storeAnswer: `UPDATE task_inputs SET response = @response, response_digest = @response_digest, answered_at_ms = @now
     WHERE task_id = @task_id AND input_key = @input_key AND answered_at_ms IS NULL`,
  /**
   * The task's side of applied answers, on the version read under the write lock: version + 1
   * and, when nothing is left outstanding (@resume), back to `working` as a first attempt with no
   * lease.
   */
  applyAnswers: `UPDATE tasks SET version = version + 1, last_updated_at_ms = @now,
       status = CASE WHEN @resume THEN 'working' ELSE status END,
       attempt = CASE WHEN @resume THEN 0 ELSE attempt END,
       lease_owner = CASE WHEN @resume THEN NULL ELSE lease_owner END,
       lease_expires_at_ms = CASE WHEN @resume THEN NULL ELSE lease_expires_at_ms END
     WHERE task_id = @task_id AND auth_key = @auth_key AND version = @version AND ${NON_TERMINAL} AND ${UNEXPIRED}
     RETURNING *`,
  /**
   * Up to @limit tasks an input deadline ends, most overdue first: each with its question due
   * first (ask order breaking ties). Restates awaitsInput and overdueQuestion.
   */
  overdueInputs: `SELECT task_id, input_key, deadline_ms, version FROM (
       SELECT i.task_id, i.input_key, i.deadline_ms, t.version,
              row_number() OVER (PARTITION BY i.task_id ORDER BY i.deadline_ms, i.ask_seq, i.input_ordinal) AS n
         FROM task_inputs i JOIN tasks t ON t.task_id = i.task_id
        WHERE i.answered_at_ms IS NULL AND i.deadline_ms IS NOT NULL AND i.deadline_ms <= @now
          AND t.status = 'input_required' AND (t.expires_at_ms IS NULL OR t.expires_at_ms > @now))
     WHERE n = 1 ORDER BY deadline_ms, task_id LIMIT @limit`,
  /** The deadline's one conditional write: still waiting at the version read (restates awaitsInput). */
  applyInputDeadline: `UPDATE tasks SET status = 'failed', version = version + 1, last_updated_at_ms = @now,
       result = @result, result_digest = @result_digest, lease_owner = NULL, lease_expires_at_ms = NULL
     WHERE task_id = @task_id AND version = @version AND status = 'input_required' AND ${UNEXPIRED}
     RETURNING *`,
} as const;
