import { encodeProgress } from '../progress-event.js';
import type { ProgressEvent } from '../types.js';

/**
 * The channel of running tasks' progress (best effort, see `TaskUpkeep.publishProgress`); the
 * payload is `schema:` and the event's JSON (`encodeProgress`). A channel of its own: a listener
 * of changes alone (an older process, `tasklatch doctor`) never mistakes progress for a change.
 */
export const PROGRESS_CHANNEL = 'tasklatch_progress';

/**
 * Progress and changes in one statement, the progress first: $1 the channel of each
 * notification, $2 its payload. Notifications are delivered in the order they were sent, so a
 * task's last progress is heard before the change that ends it.
 */
export const NOTIFY_PROGRESS_AND_CHANGES = `SELECT pg_notify(n.c, current_schema() || ':' || n.p) FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS n(c, p, i) ORDER BY n.i`;

/** The events that fit a NOTIFY payload, encoded; an event that cannot fit is dropped. */
export function encodedProgress(events: readonly ProgressEvent[]): string[] {
  return events.map(encodeProgress).filter((text): text is string => text !== null);
}
