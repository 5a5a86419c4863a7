import type { CreateEntry } from '../core/create-rules.js';
import type { ListDecision, MissDecision, ReadDecision } from '../core/decisions.js';
import type { ListedTask, TaskRecord } from '../core/types.js';
import type { AdmitOutcome, CancelOutcome } from '../store/types.js';

/** What the guard answers a `tools/call`: a request-only refusal or plain call, or the store's admission. */
export type CreateOutcome = { decision: Exclude<CreateEntry, 'ADMIT'>; record: null } | AdmitOutcome;

/** What the guard answers a `tasks/get` or `tasks/result`: the decision and, when visible, the record. */
export type ReadOutcome =
  { decision: Exclude<ReadDecision, MissDecision | 'BLOCK_CAPABILITY'>; record: TaskRecord } | { decision: MissDecision | 'BLOCK_CAPABILITY'; record: null };

/** The two reads of a task; `tasks/cancel` is a write of its own (`cancel`). */
export type ReadOnlyMethod = 'tasks/get' | 'tasks/result';

/** What the guard answers a `tasks/cancel`: the store's cancel, or a receiver that does not cancel. */
export type CancelTaskOutcome = CancelOutcome | { decision: 'BLOCK_CAPABILITY'; record: null };

/** What the guard answers a `tasks/list`: one page of the caller's tasks, or no listing here. */
export type ListOutcome =
  | { decision: Extract<ListDecision, 'LIST_FILTERED'>; records: ListedTask[]; nextCursor: string | null }
  | { decision: 'BLOCK_CAPABILITY'; records: null; nextCursor: null };

/** A read decision for which no audit line is written (one already says the same). */
export type QuietIf = (decision: ReadOutcome['decision']) => boolean;
