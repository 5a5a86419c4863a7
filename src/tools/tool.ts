import type { z } from 'zod';
import { checkConcurrencyLimit } from '../core/concurrency-rules.js';
import { checkToolVersion } from '../core/version-rules.js';
import type { TaskSupport } from '../core/types.js';
import type { JournalMismatchAction } from '../core/park-rules.js';
import type { InputRequest } from '../core/input-rules.js';
import type { AskOptions, ElicitResult, OneAskOptions } from './asking.js';
import type { Principal } from './principal.js';
import type { Step } from './step.js';

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
  /** What the tool's `prepare` returned for this task (undefined without one, and in plain calls). */
  prepared?: unknown;
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
  /**
   * Asks the requestor and resolves with the answers, by key (keys are unique for a task's
   * lifetime). Only input requests the client declared it can answer may be asked; another ends
   * the call with missing capability. In a task the question is stored and the task waits `input_required`
   * without holding a worker: once every answer is in, the handler runs again from the start and
   * each earlier `ask` resolves at once with its stored answer, so a handler must ask the same
   * questions in the same order (a different one ends the task failed); put what must not
   * happen twice in a `step.do`, whose recorded value the re-run gets back without repeating
   * it. In a plain call the client is asked within the call.
   * `options.timeoutMs` (tasks): a question still unanswered that long after it was first
   * asked ends the task failed, with an error naming its key.
   */
  ask(requests: Record<string, InputRequest>, options?: AskOptions): Promise<Record<string, unknown>>;
  /**
   * Durable steps and timers: `step.do(name, [config], fn)` records fn's JSON value in the task's
   * journal once, and every later run of the handler gets it back without calling fn;
   * `step.sleep` / `step.sleepUntil` suspend the task without holding a worker;
   * `step.now` / `step.random` / `step.uuid` record a time, a number or a UUID once. Steps, sleeps
   * and asks must come in the same order on every run. In a plain call steps run inline.
   */
  step: Step;
  /** `elicitation/create`: a message and a requested schema; the client's `{ action, content }`. */
  elicit(params: { message: string; requestedSchema: Record<string, unknown>; [key: string]: unknown }, options?: OneAskOptions): Promise<ElicitResult>;
  /** `sampling/createMessage`: a completion from the client's model. */
  sample(params: Record<string, unknown>, options?: OneAskOptions): Promise<unknown>;
  /** `roots/list`: the client's roots. */
  listRoots(options?: OneAskOptions): Promise<{ roots: Array<{ uri: string; name?: string }> }>;
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
   * The tool's JSON Schemas as its own server lists them, for a tool whose `inputSchema` is not a
   * zod 4 object (one registered with an SDK `McpServer`): what its definition digest is
   * computed over. Omit it otherwise: the digest then comes from `inputSchema`.
   */
  definition?: { inputSchema: unknown; outputSchema?: unknown };
  /**
   * The version of this tool's code, stored with each task it admits: a worker runs a task of its
   * own version while a worker of the task's version lives, and the newest version's workers take
   * the rest (see README, "Versions and deploys"). Absent: a digest of the handler's source text
   * and the definition digest, the same in every process with the same code. Name it when the
   * handler's behaviour changes in code it calls (which the digest does not see), or to keep one
   * version across edits that change nothing a task's journal depends on. 1 to 100 printable
   * characters.
   */
  version?: string;
  /**
   * For an `optional` tool on a wire where the server decides (2026-07-28): whether these
   * arguments are worth a task. Absent: always a task when the client can take one.
   */
  runsAsTask?(args: z.infer<Schema>): boolean;
  /**
   * Runs when a call is about to become a task, before anything is stored, in the call itself:
   * what it asks is asked there (in the call on 2025-11-25, as multi-round-trip input on
   * 2026-07-28), and what it returns is stored with the task and given to every run of the
   * handler as `ctx.prepared`. For questions that decide whether there is a task at all.
   */
  prepare?(args: z.infer<Schema>, ctx: ToolContext): Promise<unknown>;
  handler(args: z.infer<Schema>, ctx: ToolContext): Promise<ToolResult>;
  /**
   * What a run does when this handler disagrees with its task's journal: it reaches steps,
   * sleeps or asks in another order, kind or name than an earlier run recorded (a deploy changed
   * the handler under a task in flight). `'park'` (the default): the task stays `working`, its
   * status message says where and what differs, and it is tried again with backoff (1 s, 2 s, 4 s,
   * … at most a minute apart) by any worker, so a fixed or rolled back deploy finishes it; its ttl
   * still applies and it can be cancelled. `'fail'`: the task ends `failed` with the order error.
   * A step name used twice in one run fails either way (a fault of the handler, whatever the journal holds).
   */
  onJournalMismatch?: JournalMismatchAction;
  /**
   * At most `limit` runs of this tool at once per key, across every worker and process: the
   * store's claim takes a task of a key only while fewer than `limit` of its tasks run (leased
   * and working; a task that sleeps, waits for input or is parked holds no slot). `key` is
   * computed when a call becomes a task, from its parsed arguments and its principal (absent: one
   * key for the whole tool); it and the limit are stored with the task. A task waiting for a slot
   * stays `working`, holds no worker, says so in its status message (`waiting for a concurrency
   * slot (key "acme", 2 of 2 running)`), and starts when a run of its key ends. Task calls only:
   * a plain call runs in the request, unlimited.
   */
  concurrency?: ConcurrencyOptions<z.infer<Schema>>;
}

/** A tool's concurrency limit (see `TaskTool.concurrency`). */
export interface ConcurrencyOptions<Args = Record<string, unknown>> {
  /** Runs at once per key: an integer from 1. */
  limit: number;
  /** The key of a call's task: 1 to 200 characters (a customer, a region). Absent: the tool's name. */
  key?(args: Args, principal: Principal): string;
}

/** Declares a tool with its argument type inferred from the schema. */
export function defineTool<Schema extends z.ZodObject>(tool: TaskTool<Schema>): TaskTool<Schema> {
  if (tool.version !== undefined) checkToolVersion(tool.version, `version of tool ${tool.name}`);
  if (tool.concurrency !== undefined) checkConcurrencyLimit(tool.concurrency.limit, `concurrency.limit of tool ${tool.name}`);
  return tool;
}
