import type { Decision, EventDecision } from '../core/decisions.js';
import { isStorableText } from '../core/text.js';
import type { Millis, TaskRecord } from '../core/types.js';
import type { SendEventInput } from './task-event-box.js';
import type { AuditEntry } from './types.js';

/** What a store knows when it writes one audit line. */
export interface AuditLineInput {
  at: Millis;
  surface: AuditEntry['surface'];
  decision: Decision;
  authKey: string;
  taskId: string | null;
  correlationId: string;
  /** The record after the decision, when the caller may see it: its status and version are kept. */
  record?: Pick<TaskRecord, 'status' | 'version'> | null;
  detail?: string | null;
}

/**
 * The one shape of an audit line, in every store: `status` and `version` always present (null
 * when no record was involved or the caller may not see it), `detail` only when there is one.
 * The trails of the three stores compare equal because they are all built here.
 */
export function auditLine(input: AuditLineInput): AuditEntry {
  return boundedAuditLine(unboundedLine(input));
}

function unboundedLine(input: AuditLineInput): AuditEntry {
  const entry: AuditEntry = {
    at: input.at,
    surface: input.surface,
    decision: input.decision,
    authKey: input.authKey,
    taskId: input.taskId,
    correlationId: input.correlationId,
    status: input.record?.status ?? null,
    version: input.record?.version ?? null,
  };
  if (input.detail !== undefined && input.detail !== null) entry.detail = input.detail;
  return entry;
}

/** The longest task id an audit line keeps; ids are bounded at the wire, this is the store's own guard. */
export const MAX_AUDITED_TASK_ID = 256;

/**
 * An audit line a client's input cannot make unstorable or large: a task id that is too long,
 * or not well-formed text (a NUL, a lone surrogate), is left out and said so in the detail.
 */
export function boundedAuditLine(entry: AuditEntry): AuditEntry {
  const id = entry.taskId;
  if (id === null || (id.length <= MAX_AUDITED_TASK_ID && isStorableText(id))) return entry;
  return Object.assign({}, entry, { taskId: null, detail: `task id not kept (${id.length} characters${isStorableText(id) ? '' : ', not storable text'})` });
}

/** The detail of an audit line of a decision the store's operator made (a cancel from the console). */
export const OPERATOR_DETAIL = 'by operator';

/** The detail of a cancellation's audit line: the operator's, or none (the task's principal). */
export function cancelDetail(input: { byOperator?: boolean }): string | null {
  return input.byOperator === true ? OPERATOR_DETAIL : null;
}

/**
 * The audit line of a send, the same in every store: the sender's auth key (an operator's send
 * is written under the task's own), the task as the sender may see it after the send, and the
 * type with the stored event's number (`payment.succeeded#3`) when it was stored.
 */
export function sendEventAuditLine(input: SendEventInput, decision: EventDecision, visible: TaskRecord | null, seq: number | null): AuditEntry {
  return auditLine({
    at: input.now,
    surface: 'event',
    decision,
    authKey: input.authKey ?? visible?.authKey ?? '',
    taskId: input.taskId,
    correlationId: input.correlationId,
    record: visible,
    detail: seq === null ? input.type : `${input.type}#${seq}`,
  });
}
