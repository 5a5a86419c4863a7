/**
 * What the PostgreSQL store's statements share: the predicates that restate a core rule in SQL,
 * the audit table's column list, and how a write of one task answers. Unqualified names resolve through the connection's
 * search_path, which `?schema=` sets. Each WHERE clause that guards a write is a core rule
 * restated for one statement, and says which; every other decision is made in TypeScript by
 * the core. No statement notifies: the store sends the change notifications of a write after it
 * committed (`ChangeNotifier`, listener.ts), so NOTIFY's commit-time lock never serialises the writes.
 */

/** `(expires_at_ms IS NULL OR expires_at_ms > now)` with `now` as parameter `$n`: restates !isExpired. */
export function unexpired(n: number): string {
  return `(expires_at_ms IS NULL OR expires_at_ms > $${n})`;
}

/**
 * The owner test of a statement that finds one task by its id: the row's auth key is `key` (a
 * parameter), written `IS NOT DISTINCT FROM`, which for the NOT NULL column and a key given is
 * `=`, but is never an index condition. With `auth_key = $2` beside `task_id = $1`, the planner
 * on an empty schema costs an index led by the auth key (the caller's working tasks, its listing
 * order, its idempotency keys) the same as the primary key and may take it, and a connection
 * keeps that generic plan while the table grows, until an ANALYZE plans it again: every write of
 * a task then walked all of its caller's tasks (a caller with 20,000 working tasks: 4.5–4.8 ms a
 * status write, 0.56 ms by the primary key). As a filter the task id is the only index condition
 * left (postgres-plans.test.ts).
 */
export function ownerIs(key: string, table = ''): string {
  return `${table === '' ? '' : `${table}.`}auth_key IS NOT DISTINCT FROM ${key}`;
}

/** The guard of every applied write: this task, this auth key, still open (with unexpired: restates decideTransition's APPLY_TRANSITION). */
export const OPEN_AND_VISIBLE = `task_id = $1 AND ${ownerIs('$2')} AND status IN ('working', 'input_required')`;

/** The columns of an audit line, in the order `auditToRow` gives their values. */
export const AUDIT_COLUMNS = '(at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)';

/**
 * How a write of one task answers (a status write, a cancellation, a claim, an abandon; a fresh
 * step and the claim walk's page give their tasks the same way): the row it wrote as one JSON
 * value (column `task`, read back with row.ts `appliedTaskRow`), not a row of every column.
 * node-postgres parses a result's row description and each of its columns on every execution,
 * in JavaScript; one JSON column is one native `JSON.parse`. Measured apart, a terminal status
 * write cost the Node process 47–97 µs of CPU answered with every column and 26–69 µs answered
 * as JSON, in batches of 8 (four alternating rounds of 2,000 writes). Columns keep their JSON types, as in
 * the batched read (read-batcher.ts): int8 as numbers, jsonb as the value pg would have parsed.
 * A migration that adds a column no longer changes the statement's result type either.
 */
export const appliedAsJson = 'SELECT to_json(applied) AS task FROM applied';
