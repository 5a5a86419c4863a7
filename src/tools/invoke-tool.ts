import { InputNeeded } from './asking.js';
import { isStoreFault } from '../core/errors.js';
import { ProtocolError, storeUnavailable } from './protocol-error.js';
import type { TaskTool, ToolContext, ToolResult } from './tool.js';

/** A `CallToolResult` that reports a failure to the caller: `isError` with one text block. */
export function errorResult(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * One invocation of a tool, the same for plain calls and task runs: the arguments are parsed
 * with the tool's schema, the handler runs, and anything it throws becomes an `isError` result
 * (a tool never ends a call with an exception of ours), except a `ProtocolError`, which is the
 * tool's own choice to end the call with a JSON-RPC error, and `InputNeeded` (a question the
 * call must send back to its client first): both are thrown on to the caller; so is a store
 * fault, as the retryable `Store unavailable`.
 * `onThrow` hears what else a handler threw while its run was not being stopped, so the caller
 * can log it.
 */
export async function invokeTool(tool: TaskTool, args: unknown, ctx: ToolContext, onThrow?: (error: unknown) => void): Promise<ToolResult> {
  return invokeParsed(tool, parseArguments(tool, args), ctx, onThrow);
}

/** The arguments of a call as the tool's schema parsed them (`parseArguments`). */
export type ParsedArguments = ReturnType<TaskTool['inputSchema']['safeParse']>;

/** Parses a call's arguments (absent: `{}`) with the tool's schema, once for everything that reads them. */
export function parseArguments(tool: TaskTool, args: unknown): ParsedArguments {
  return tool.inputSchema.safeParse(args ?? {});
}

/** `invokeTool` on arguments already parsed with the tool's schema (`parseArguments`). */
export async function invokeParsed(tool: TaskTool, parsed: ParsedArguments, ctx: ToolContext, onThrow?: (error: unknown) => void): Promise<ToolResult> {
  if (!parsed.success) return errorResult(argumentsMessage(tool, parsed.error));
  try {
    return await tool.handler(parsed.data, ctx);
  } catch (error) {
    if (ctx.signal.aborted) return errorResult(`stopped: ${String((ctx.signal.reason as Error | undefined)?.message)}`);
    if (error instanceof ProtocolError || error instanceof InputNeeded) throw error;
    onThrow?.(error);
    // A store fault (the error, or one in its cause chain) is no result of the tool's: the call
    // answers the retryable Store unavailable, never an `isError` result carrying the store's
    // text. A task run has stopped already (its `onThrow`) and stores nothing.
    if (isStoreFault(error)) throw storeUnavailable();
    return errorResult(error instanceof Error ? error.message : String(error));
  }
}

/**
 * Checks a task call's arguments before its record exists, so that a call that could never run
 * is refused with nothing stored; the run parses them again. Returns the schema's message, or
 * null when they are valid.
 */
export function argumentProblem(tool: TaskTool, args: unknown): string | null {
  const parsed = parseArguments(tool, args);
  return parsed.success ? null : argumentsMessage(tool, parsed.error);
}

/** What a call with arguments its tool's schema refuses is told. */
export function argumentsMessage(tool: TaskTool, error: { message: string }): string {
  return `Invalid arguments for tool ${tool.name}: ${error.message}`;
}
