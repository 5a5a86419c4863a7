import type { TaskAsk } from '../../core/call-rules.js';
import type { TaskRecord } from '../../core/types.js';
import type { InputNeeded } from '../../tools/asking.js';
import type { Principal } from '../../tools/principal.js';
import type { ToolContext, ToolResult } from '../../tools/tool.js';
import type { TraceCarrier } from '../../trace/trace-context.js';

/** One `tools/call` as a wire hands it to `callTool`: what it carries, in either generation's terms. */
export interface ToolCall {
  principal: Principal;
  /** The call's params as sent: `name`, `arguments`, `_meta` and, on 2025-11-25, `task`. */
  params: Record<string, unknown>;
  /**
   * The params a task of this call stores, before what the tool's `prepare` returns: the wire's
   * own members left out (2026-07-28 rounds), what it knows of the client put in (2025-11-25
   * session capabilities). Default: `params`.
   */
  stored?: Record<string, unknown>;
  /** The HTTP `Idempotency-Key` header, when there is one. */
  headerKey: string | null;
  /** The HTTP `traceparent` and `tracestate` headers: the call's trace parent when `params._meta` names none. */
  traceHeaders?: TraceCarrier;
  /** How this call asks for a task (`decideCallMode`). */
  asks: TaskAsk;
  /** Whether the client can follow a task at all (`decideCallMode`). */
  clientTakesTasks: boolean;
  /**
   * The context of a plain run or of the tool's `prepare`: how the call asks its client and
   * reports progress. Made once, after the call is known to run (a refused call makes none).
   */
  context(): ToolContext | Promise<ToolContext>;
  /**
   * True when making the context checks nothing about the call (the session wire's): a task
   * admission whose tool has no `prepare` then makes none. Absent, the context is made before
   * any admission (the 2026-07-28 wire's verifies the call's signed round state, when the call
   * carries one; it is plain otherwise).
   */
  plainContext?: boolean;
}

/** Decisions of the create surface that refuse a call (each one audited). */
export type CallRefusal = 'BLOCK_TASK_REQUIRED' | 'BLOCK_TASK_FORBIDDEN' | 'BLOCK_IDEMPOTENCY_COLLISION' | 'BLOCK_TASK_LIMIT' | 'BLOCK_STORED_LIMIT';

/**
 * What one `tools/call` came to; each wire maps it to its messages and decides nothing more.
 * - `task`: admitted (or replayed by its idempotency key); `followUp`: answer it as the text
 *   the task tools follow, not as a task.
 * - `result`: run plainly, in the call; the tool's result.
 * - `input`: a plain call (or a `prepare`) that must ask its client before it can go on
 *   (2026-07-28 multi-round input); nothing was stored.
 * - `refused`: a decision of the create surface that refuses it (audited); `message` is what
 *   the caller is told where the wire has no phrasing of its own.
 * - `invalid`: the request itself was refused before any decision (bounds, an unknown tool,
 *   arguments of a task call its schema refuses, an unstorable request): invalid params on both wires,
 *   no decision and no audit line, as for any malformed request.
 */
export type CallOutcome =
  | { kind: 'task'; decision: 'ACCEPT_TASK' | 'REPLAY_TASK'; record: TaskRecord; followUp: boolean }
  | { kind: 'result'; decision: 'ACCEPT_NORMAL' | 'BLOCK_CAPABILITY'; result: ToolResult }
  | { kind: 'input'; needed: InputNeeded }
  | { kind: 'refused'; decision: CallRefusal; tool: string; message: string }
  | { kind: 'invalid'; message: string };

/** The limits a refusal's message names. */
export interface RefusalLimits {
  maxActiveTasks: number | null;
  maxStoredTasks: number | null;
}

/** What a refused call is told, the same on both wires unless the wire phrases the decision itself. */
export function refusalMessage(decision: CallRefusal, tool: string, limits: RefusalLimits, key: string | null): string {
  switch (decision) {
    case 'BLOCK_TASK_REQUIRED':
      return `Tool ${tool} must be called as a task`;
    case 'BLOCK_TASK_FORBIDDEN':
      return `Tool ${tool} does not support task-augmented calls`;
    case 'BLOCK_IDEMPOTENCY_COLLISION':
      return `Idempotency key ${JSON.stringify(key)} is already used by a different request`;
    case 'BLOCK_TASK_LIMIT':
      return `Too many active tasks: at most ${limits.maxActiveTasks ?? 0} non-terminal tasks per caller`;
    case 'BLOCK_STORED_LIMIT':
      return `Too many stored tasks: at most ${limits.maxStoredTasks ?? 0} unexpired tasks per caller, finished ones included`;
  }
}
