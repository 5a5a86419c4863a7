import type { z } from 'zod';
import type { TaskSupport } from '../core/types.js';
import type { Principal } from './principal.js';

/** What a tool handler is given, for plain and task calls alike. */
export interface ToolContext {
  /** The task id, or null for a plain call. */
  taskId: string | null;
  principal: Principal;
  /** Fires on cancellation, on expiry, and when the server shuts down. */
  signal: AbortSignal;
  /**
   * Stable across every attempt of the same task (and unique per plain call): name the tool's
   * own side effects after it (a file path, an upstream request id) to make them idempotent.
   */
  idempotencyKey: string;
  /**
   * What the requesting client declared it can do (`elicitation`, `sampling`, `roots`,
   * `extensions`…), from the request that created the call; null where the wire does not say.
   */
  clientCapabilities: Record<string, unknown> | null;
  /** Sets the task's status message (a status write, versioned like any other). */
  reportStatus(message: string): Promise<void>;
  /** Sends a progress notification with the request's progressToken, if it had one. */
  reportProgress(progress: number, total?: number, message?: string): Promise<void>;
  /**
   * Asks the store, now, whether this run still holds the task (not cancelled, not expired, not
   * taken over) and throws the abort reason if not. Call it right before an irreversible side
   * effect: it narrows the window in which a cancellation written elsewhere is not yet seen.
   */
  checkpoint(): Promise<void>;
}

/** The result a tool returns: an MCP `CallToolResult`. */
export interface ToolResult {
  content: Array<Record<string, unknown> & { type: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  [key: string]: unknown;
}

/**
 * A tool served by tasklatch. `inputSchema` is a zod object schema: arguments are validated
 * before any record exists, and its JSON Schema is what `tools/list` shows.
 */
export interface TaskTool<Schema extends z.ZodObject = z.ZodObject> {
  name: string;
  title?: string;
  description: string;
  inputSchema: Schema;
  /** Omit for a tool that never runs as a task (taskSupport `forbidden`). */
  execution?: { taskSupport: TaskSupport };
  /**
   * For an `optional` tool on a wire where the server decides (2026-07-28): whether these
   * arguments are worth a task. Absent: always a task when the client can take one.
   */
  runsAsTask?(args: z.infer<Schema>): boolean;
  handler(args: z.infer<Schema>, ctx: ToolContext): Promise<ToolResult>;
}

/** Declares a tool with its argument type inferred from the schema. */
export function defineTool<Schema extends z.ZodObject>(tool: TaskTool<Schema>): TaskTool<Schema> {
  return tool;
}
