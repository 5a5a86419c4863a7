import { encodeProgress } from '../progress-event.js';
import type { ProgressEvent } from '../types.js';

/**
 * The channel of running tasks' progress (best effort, see `TaskUpkeep.publishProgress`); the
 * payload is `schema:` and the event's JSON (`encodeProgress`). A channel of its own: a listener
 * of changes alone (an older process, `tasklatch doctor`) never mistakes progress for a change.
 */
export const PROGRESS_CHANNEL = 'tasklatch_progress';

/** The events that fit a NOTIFY payload, encoded; an event that cannot fit is dropped. */
export function encodedProgress(events: readonly ProgressEvent[]): string[] {
  return events.map(encodeProgress).filter((text): text is string => text !== null);
}
