/**
 * What the PostgreSQL store's statements share: the predicates that restate a core rule in SQL,
 * and the audit table's column list. Unqualified names resolve through the connection's
 * search_path, which `?schema=` sets. Each WHERE clause that guards a write is a core rule
 * restated for one statement, and says which; every other decision is made in TypeScript by
 * the core. No statement notifies: the store sends the change notifications of a write after it
 * committed (`ChangeNotifier`, listener.ts), so NOTIFY's commit-time lock never serialises the writes.
 */

/** `(expires_at_ms IS NULL OR expires_at_ms > now)` with `now` as parameter `$n`: restates !isExpired. */
export function unexpired(n: number): string {
  return `(expires_at_ms IS NULL OR expires_at_ms > $${n})`;
}

/** The guard of every applied write: this task, this auth key, still open (with unexpired: restates decideTransition's APPLY_TRANSITION). */
export const OPEN_AND_VISIBLE = `task_id = $1 AND auth_key = $2 AND status IN ('working', 'input_required')`;

/** The columns of an audit line, in the order `auditToRow` gives their values. */
export const AUDIT_COLUMNS = '(at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)';
