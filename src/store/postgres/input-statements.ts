import { AUDIT_COLUMNS, OPEN_AND_VISIBLE, ownerIs, unexpired } from './predicates.js';

/**
 * The statements of the input role in PostgreSQL: ask, answer, the questions of a task, their
 * deadlines. Every writer locks the task row before any of its questions, as the sweeper's
 * cascade does.
 */
export const inputSql = {
  /**
   * An ask as one statement: the conditional task UPDATE, restating decideAsk's APPLY_ASK (the
   * asker's fence, as holdsFence, on a `working` task, none of the keys asked before), the
   * questions after the task's others and the audit line; all only when
   * the UPDATE changed the row. Parameters: $1 task id, $2 auth key, $3 version, $4 lease owner,
   * $5 now, $6 keys, $7 ask seq, $8 the questions as JSON `[{ key, request, digest, deadline }]` in
   * ask order (deadline null for none), $9–$17 the audit line (`auditToRow`), $18 the ask's
   * journal position (null: not said).
   */
  applyAsk: `
  WITH applied AS (
    UPDATE tasks SET status = 'input_required', version = version + 1, last_updated_at_ms = $5, parked_at_ms = NULL, parks = 0
     WHERE task_id = $1 AND ${ownerIs('$2')} AND version = $3 AND lease_owner = $4 AND status = 'working' AND ${unexpired(5)}
       AND NOT EXISTS (SELECT 1 FROM task_inputs i WHERE i.task_id = $1 AND i.input_key = ANY($6::text[]))
    RETURNING *
  ), asked AS (
    INSERT INTO task_inputs (task_id, input_key, ask_seq, input_ordinal, request, request_digest, asked_at_ms, deadline_ms, position)
    SELECT a.task_id, q.value ->> 'key', $7::int, base.n + q.n - 1, q.value -> 'request', q.value ->> 'digest', $5::bigint,
           (q.value ->> 'deadline')::bigint, $18::int
      FROM applied a
     CROSS JOIN (SELECT coalesce(max(input_ordinal) + 1, 0) AS n FROM task_inputs WHERE task_id = $1) base
     CROSS JOIN jsonb_array_elements($8::jsonb) WITH ORDINALITY AS q (value, n)
  ), audited AS (
    INSERT INTO task_audit ${AUDIT_COLUMNS}
    SELECT $9::bigint, $10::text, $11::text, $12::text, $13::text, $14::text, $15::text, $16::int, $17::text FROM applied
  )
  SELECT applied.* FROM applied`,

  /** What an ask that changed nothing is classified by: the task and the keys it asked, in one snapshot. */
  selectAsked: `
  SELECT t.*, ARRAY(SELECT input_key FROM task_inputs i WHERE i.task_id = t.task_id) AS asked_keys
    FROM tasks t WHERE t.task_id = $1`,

  /** The task an answer reads, locked until commit: no other answer reads its questions meanwhile. */
  selectForAnswer: `SELECT * FROM tasks WHERE task_id = $1 FOR UPDATE`,

  /** A task's questions in ask order, then the order asked within one ask. */
  selectInputs: `SELECT * FROM task_inputs WHERE task_id = $1 ORDER BY ask_seq, input_ordinal`,

  /**
   * The caller's unexpired task's questions: no row when the task is out of reach, one row of
   * NULLs when it has none. $1 task id, $2 auth key, $3 now.
   */
  selectVisibleInputs: `
  SELECT i.* FROM tasks t LEFT JOIN task_inputs i ON i.task_id = t.task_id
   WHERE t.task_id = $1 AND ${ownerIs('$2', 't')} AND (t.expires_at_ms IS NULL OR t.expires_at_ms > $3)
   ORDER BY i.ask_seq, i.input_ordinal`,

  /**
   * Applied answers as one statement, on the version read under the row lock: each answer only to
   * a question still outstanding (decideAnswer's APPLY_ANSWER), the task version + 1 and, when
   * nothing is left outstanding ($5), back to `working` as a first attempt with no lease and its
   * open outbox entry due at once. It returns the record and how
   * many answers it stored. Parameters: $1 task id, $2 auth key, $3 version, $4 now, $5 resume,
   * $6 the answers as JSON `[{ key, response, digest }]`.
   */
  applyAnswers: `
  WITH answered AS (
    UPDATE task_inputs i SET response = a.response, response_digest = a.digest, answered_at_ms = $4
      FROM jsonb_to_recordset($6::jsonb) AS a (key text, response jsonb, digest text)
     WHERE i.task_id = $1 AND i.input_key = a.key AND i.answered_at_ms IS NULL
    RETURNING i.input_key
  ), applied AS (
    UPDATE tasks SET version = version + 1, last_updated_at_ms = $4,
           status = CASE WHEN $5::boolean THEN 'working' ELSE status END,
           attempt = CASE WHEN $5::boolean THEN 0 ELSE attempt END,
           lease_owner = CASE WHEN $5::boolean THEN NULL ELSE lease_owner END,
           lease_expires_at_ms = CASE WHEN $5::boolean THEN NULL ELSE lease_expires_at_ms END
     WHERE ${OPEN_AND_VISIBLE} AND version = $3 AND ${unexpired(4)}
    RETURNING *
  ), moved AS (
    UPDATE task_outbox o SET available_at_ms = $4, claimed_by = NULL, lease_expires_at_ms = NULL
      FROM applied a WHERE $5::boolean AND o.task_id = a.task_id AND o.done_at_ms IS NULL
  )
  SELECT applied.*, (SELECT count(*)::int FROM answered) AS answered
    FROM applied`,

  /** Seeding: a question as it is (inputToRow); one already stored keeps its place. */
  upsertInput: `
  INSERT INTO task_inputs (task_id, input_key, ask_seq, input_ordinal, request, request_digest, asked_at_ms, response, response_digest, answered_at_ms,
    deadline_ms, position)
  SELECT $1::text, $2::text, $3::int, coalesce(max(input_ordinal) + 1, 0), $4::jsonb, $5::text, $6::bigint, $7::jsonb, $8::text, $9::bigint, $10::bigint,
         $11::int
    FROM task_inputs WHERE task_id = $1::text
  ON CONFLICT (task_id, input_key) DO UPDATE SET ask_seq = EXCLUDED.ask_seq, request = EXCLUDED.request,
    request_digest = EXCLUDED.request_digest, asked_at_ms = EXCLUDED.asked_at_ms, response = EXCLUDED.response,
    response_digest = EXCLUDED.response_digest, answered_at_ms = EXCLUDED.answered_at_ms, deadline_ms = EXCLUDED.deadline_ms,
    position = EXCLUDED.position`,

  /**
   * Up to $2 tasks an input deadline ends at $1, most overdue first: each with its question due
   * first (ask order breaking ties). Restates awaitsInput and overdueQuestion.
   */
  overdueInputs: `
  SELECT task_id, input_key, deadline_ms, version FROM (
    SELECT DISTINCT ON (i.task_id) i.task_id, i.input_key, i.deadline_ms, t.version
      FROM task_inputs i JOIN tasks t ON t.task_id = i.task_id
     WHERE i.answered_at_ms IS NULL AND i.deadline_ms IS NOT NULL AND i.deadline_ms <= $1
       AND t.status = 'input_required' AND (t.expires_at_ms IS NULL OR t.expires_at_ms > $1)
     ORDER BY i.task_id, i.deadline_ms, i.ask_seq, i.input_ordinal) overdue
   ORDER BY deadline_ms, task_id LIMIT $2`,

  /**
   * Ends one overdue task as one statement: the conditional write on the version read (still
   * waiting and unexpired: awaitsInput), its outbox entry closed, the audit line. Parameters: $1
   * task id, $2 version, $3 now, $4 the outcome (JSON), $5 its digest, $6 correlation id, $7
   * audit detail.
   */
  applyInputDeadline: `
  WITH applied AS (
    UPDATE tasks SET status = 'failed', version = version + 1, last_updated_at_ms = $3, result = $4, result_digest = $5,
           lease_owner = NULL, lease_expires_at_ms = NULL
     WHERE task_id = $1 AND version = $2 AND status = 'input_required' AND ${unexpired(3)}
    RETURNING *
  ), closed AS (
    UPDATE task_outbox o SET done_at_ms = $3 FROM applied a WHERE o.task_id = a.task_id AND o.done_at_ms IS NULL
  ), audited AS (
    INSERT INTO task_audit ${AUDIT_COLUMNS}
    SELECT $3::bigint, 'transition', 'APPLY_TRANSITION', auth_key, task_id, $6::text, status, version, $7::text FROM applied
  )
  SELECT applied.task_id, applied.version FROM applied`,
} as const;
