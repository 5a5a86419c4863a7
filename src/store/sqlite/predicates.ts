/**
 * What the SQLite store's statements share: the predicates that restate a core rule in SQL.
 * Each WHERE clause that guards a write is a core rule restated for one statement, and says
 * which; every other decision is made in TypeScript by the core.
 */

/** The visibility predicate every caller-facing query carries, never a filter applied afterwards: restates !isExpired. */
export const UNEXPIRED = '(expires_at_ms IS NULL OR expires_at_ms > @now)';

/** A task still open: `working` or `input_required` (restates !isTerminal). */
export const NON_TERMINAL = "status IN ('working', 'input_required')";
