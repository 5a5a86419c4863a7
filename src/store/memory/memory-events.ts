import { decideSendEvent, sendWakes } from '../../core/event-rules.js';
import { holdsFence } from '../../core/dispatch-rules.js';
import type { StepRecord } from '../../core/step-rules.js';
import type { Millis, TaskRecord } from '../../core/types.js';
import { sendEventAuditLine } from '../audit-line.js';
import type { SendEventInput, SendEventOutcome, TakeEventInput, TakeEventOutcome } from '../task-event-box.js';
import type { AuditEntry } from '../types.js';

/** One row of the task_events table of the SQL stores. */
export interface MemoryEvent {
  seq: number;
  type: string;
  payloadText: string;
  key: string | null;
  sentAt: Millis;
  consumedAt: Millis | null;
  position: number | null;
}

/**
 * The event role of the memory store, over the store's own maps; each function runs to
 * completion without awaiting, so it is atomic by construction.
 */
export interface MemoryEventState {
  readonly tasks: ReadonlyMap<string, TaskRecord>;
  /** taskId → its events in send order. */
  readonly events: Map<string, MemoryEvent[]>;
  readonly journal: ReadonlyMap<string, readonly StepRecord[]>;
  readonly outbox: ReadonlyMap<string, { availableAt: Millis; doneAt: Millis | null }>;
  readonly audit: { append(line: AuditEntry): void };
}

export function sendEventIn(state: MemoryEventState, input: SendEventInput): SendEventOutcome {
  const task = state.tasks.get(input.taskId) ?? null;
  const events = state.events.get(input.taskId) ?? [];
  const decision = decideSendEvent({
    record: task,
    auth: input.authKey,
    now: input.now,
    payloadBytes: Buffer.byteLength(input.payloadText, 'utf8'),
    maxEventBytes: input.maxEventBytes,
    pending: events.filter((e) => e.consumedAt === null).length,
    maxPendingEvents: input.maxPendingEvents,
  });
  const visible = task !== null && (input.authKey === null || task.authKey === input.authKey) ? task : null;
  let seq: number | null = null;
  let woke = false;
  if (decision === 'APPLY_EVENT' && task !== null) {
    seq = (events.at(-1)?.seq ?? 0) + 1;
    events.push({ seq, type: input.type, payloadText: input.payloadText, key: input.key, sentAt: input.now, consumedAt: null, position: null });
    state.events.set(input.taskId, events);
    const waiting = isWaitingForEvent(state.journal.get(input.taskId));
    if (waiting) woke = dueNow(state, input.taskId, input.now);
    if (sendWakes(task, waiting)) {
      task.version += 1;
      task.lastUpdatedAt = input.now;
    }
  }
  state.audit.append(sendEventAuditLine(input, decision, visible, seq));
  return { decision, record: visible === null ? null : structuredClone(visible), seq, woke };
}

export function takeEventIn(state: MemoryEventState, input: TakeEventInput): TakeEventOutcome {
  const task = state.tasks.get(input.fence.taskId) ?? null;
  if (task === null || task.status !== 'working' || !holdsFence(task, input.fence, input.now)) return { decision: 'LOST', event: null };
  const events = state.events.get(input.fence.taskId) ?? [];
  const taken = events.find((e) => e.position === input.position) ?? events.find((e) => e.consumedAt === null && e.type === input.type);
  if (taken === undefined) return { decision: 'HELD', event: null };
  taken.consumedAt ??= input.now;
  taken.position = input.position;
  return { decision: 'HELD', event: { seq: taken.seq, payload: JSON.parse(taken.payloadText) as unknown } };
}

/** After a suspension recording a wait of `type`: due now when an event of the type is pending. */
export function wakeIfPending(state: MemoryEventState, taskId: string, type: string, now: Millis): boolean {
  const pending = (state.events.get(taskId) ?? []).some((e) => e.consumedAt === null && e.type === type);
  return pending && dueNow(state, taskId, now);
}

function isWaitingForEvent(rows: readonly StepRecord[] | undefined): boolean {
  return rows?.some((r) => r.kind === 'event' && r.status === 'waiting') ?? false;
}

/** The task's open outbox entry due now (not later than it was); whether there was one. */
function dueNow(state: MemoryEventState, taskId: string, now: Millis): boolean {
  const entry = state.outbox.get(taskId);
  if (entry === undefined || entry.doneAt !== null) return false;
  entry.availableAt = Math.min(entry.availableAt, now);
  return true;
}
