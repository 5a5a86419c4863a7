import type { StepError } from './step-rules.js';
import { isExpired } from './time.js';
import { isTerminal, type Millis, type TaskRecord } from './types.js';

/**
 * The child surface: tasks a task's handler starts (`ctx.step.runTool(name, tool, args)`).
 *
 * - **child**: a task of another tool of the same application and principal, admitted like any
 *   task (the tool must exist and take tasks, its arguments must parse), with the parent's id
 *   recorded (`parentTaskId`). Its journal row in the parent is kind `child`, named by the step,
 *   `waiting` with the child's task id as its value until the child ends, then `completed` (the
 *   child's result) or `failed` (a failed, cancelled or expired child).
 * - **identity**: the child's idempotency key is derived from the parent and the step name
 *   (`childIdempotencyKey`), so every run of the parent that reaches the step finds the same
 *   child, whether or not its row was written before a crash.
 * - **lifetime**: a child never outlives its parent (`childTtl`): an expiring parent takes its
 *   children with it; a cancelled parent cancels its children that are still running.
 * - **waking**: the parent waits without a run; a child's terminal write makes the parent due at
 *   once (`TaskChildren.wakeParent`), and a recheck (`childRecheckDelay`) covers a wake lost to a
 *   crash between the two writes or a child that ended without a write (its expiry).
 */

/** The idempotency key of the child a parent's step `name` starts: the same on every run of the parent. */
export function childIdempotencyKey(parentTaskId: string, name: string): string {
  return `tasklatch:child:${parentTaskId}:${name}`;
}

/**
 * The ttl a child is admitted with: what it asked for (`granted`, already within the service's
 * bounds; null: none), cut to end no later than its parent (`parentExpiresAt`; null: the parent
 * never expires). At least 1 ms: a parent whose run reaches the step has not expired.
 */
export function childTtl(granted: number | null, parentExpiresAt: Millis | null, now: Millis): number | null {
  if (parentExpiresAt === null) return granted;
  const left = Math.max(1, parentExpiresAt - now);
  return granted === null ? left : Math.min(granted, left);
}

/** What a parent's run does with a child step whose row says `waiting` (`decideChildWait`). */
export type ChildWait =
  /** The child completed: its result is the step's value (the row becomes `completed`). */
  | { kind: 'RETURN'; value: unknown }
  /** The child failed, was cancelled or expired (or is gone): the step fails (the row becomes `failed`). */
  | { kind: 'THROW'; error: StepError }
  /** The child still runs: the parent waits again. */
  | { kind: 'WAIT' };

/**
 * How a waited-for child stands, from its record as the parent's principal reads it (null: not
 * found, an expired child removed by retention). An expired child that did not end counts as
 * ended by its expiry.
 */
export function decideChildWait(input: {
  child: Pick<TaskRecord, 'taskId' | 'toolName' | 'status' | 'result' | 'expiresAt'> | null;
  now: Millis;
  childTaskId: string;
}): ChildWait {
  const { child, now } = input;
  if (child === null) return { kind: 'THROW', error: { name: 'ChildTaskError', message: `child task ${input.childTaskId} is gone (expired and removed)` } };
  if (child.status === 'completed') return { kind: 'RETURN', value: child.result };
  if (isTerminal(child.status)) return { kind: 'THROW', error: childError(child) };
  if (isExpired(child, now))
    return { kind: 'THROW', error: { name: 'ChildTaskError', message: `child task ${child.taskId} (${child.toolName ?? 'tool'}) expired` } };
  return { kind: 'WAIT' };
}

/** The error a parent's step records for a child that ended `failed` or `cancelled`: its status and, for a failure, its result's text. */
export function childError(child: Pick<TaskRecord, 'taskId' | 'toolName' | 'status' | 'result'>): StepError {
  const text = resultText(child.result);
  const what = `child task ${child.taskId} (${child.toolName ?? 'tool'}) ${child.status}`;
  return { name: 'ChildTaskError', message: text === null ? what : `${what}: ${text}` };
}

/** The first text block of a CallToolResult (`{ content: [{ type: 'text', text }] }`), or a JSON-RPC error's message; null otherwise. */
function resultText(result: unknown): string | null {
  if (typeof result !== 'object' || result === null) return null;
  const { content, error } = result as { content?: unknown; error?: { message?: unknown } };
  if (Array.isArray(content)) {
    const block = content.find(
      (c): c is { type: 'text'; text: string } => (c as { type?: unknown })?.type === 'text' && typeof (c as { text?: unknown }).text === 'string',
    );
    if (block !== undefined) return block.text.slice(0, 500);
  }
  if (typeof error?.message === 'string') return error.message.slice(0, 500);
  return null;
}

/** Shortest and longest recheck of a parent waiting on its children. */
export const CHILD_RECHECK_MIN_MS = 1000;
export const CHILD_RECHECK_MAX_MS = 60_000;

/**
 * When a parent waiting on children is due again if no child's end wakes it first: a quarter of
 * how long it has waited, from 1 s to 60 s. The recheck only covers a lost wake (a crash between
 * a child's terminal write and the wake, a child ended by its expiry): a child's end normally
 * wakes its parent at once.
 */
export function childRecheckDelay(waitedMs: number): number {
  return Math.min(CHILD_RECHECK_MAX_MS, Math.max(CHILD_RECHECK_MIN_MS, Math.floor(waitedMs / 4)));
}

/** A parent's status message while it waits on children. */
export function waitingChildrenMessage(names: readonly string[]): string {
  const shown = names
    .slice(0, 3)
    .map((n) => JSON.stringify(n))
    .join(', ');
  return `waiting for child task${names.length === 1 ? '' : 's'} ${shown}${names.length > 3 ? ` and ${names.length - 3} more` : ''}`;
}
