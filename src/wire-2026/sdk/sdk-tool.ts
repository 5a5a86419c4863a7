import { JSON_RPC_CODES } from '../../core/json-rpc-codes.js';
import { META_KEYS } from '../../core/meta-keys.js';
import { inputJsonSchema, schemaFromCheck, zodMajorOf, type SchemaCheck } from '../../tools/input-schema.js';
import type { InputRequest } from '../../core/input-rules.js';
import type { TaskSupport } from '../../core/types.js';
import { authKeyOf } from '../../tools/principal.js';
import { ProtocolError } from '../../tools/protocol-error.js';
import { roundSteps, type Step } from '../../tools/step.js';
import type { TaskTool, ToolContext, ToolResult } from '../../tools/tool.js';
import type { RegisteredV2Tool } from './sdk-internals.js';

/** A handler that keeps asking is stopped here: each round is one more run of the callback. */
const MAX_ROUNDS = 32;

/** A Standard Schema's outcome; a path segment is a key or `{ key }`. */
type StandardOutcome = { value?: unknown; issues?: ReadonlyArray<{ message: string; path?: ReadonlyArray<unknown> }> };

interface StandardSchema {
  '~standard': { vendor: string; validate(value: unknown): StandardOutcome | Promise<StandardOutcome> };
}

function segment(part: unknown): string {
  return typeof part === 'object' && part !== null && 'key' in part ? String(part.key) : String(part);
}

/**
 * A tool registered with `McpServer.registerTool` (2.x), as a tasklatch tool. Its arguments are
 * checked with its own Standard Schema (synchronously: a task's arguments are checked before
 * any record exists). Its callback runs in a worker, in any process, with a 2.x-shaped context
 * built from the task's: `mcpReq.signal` (cancellation, expiry, shutdown), `http.authInfo` of
 * the task's caller (`clientId` is the auth key, `extra.principal` the principal; the bearer
 * token is never stored), progress notifications as the task's progress. A callback that
 * returns `inputRequired(…)` asks the requestor durably: the task waits `input_required`, and
 * once answered the callback runs again with the answers in `mcpReq.inputResponses`.
 */
export function taskToolFromV2(name: string, tool: RegisteredV2Tool, taskSupport: Exclude<TaskSupport, 'forbidden'>): TaskTool {
  const schema = tool.inputSchema as StandardSchema | undefined;
  const check: SchemaCheck = (value) => {
    if (schema === undefined) return { success: true, data: undefined };
    const outcome = schema['~standard'].validate(value);
    if (outcome instanceof Promise)
      return { success: false, error: new Error(`the input schema of tool ${name} validates asynchronously; a task tool needs a synchronous one`) };
    const { value: data, issues } = outcome;
    if (issues === undefined) return { success: true, data };
    const described = issues.map((issue) => `${(issue.path ?? []).map(segment).join('.') || '(root)'}: ${issue.message}`).join('; ');
    return { success: false, error: new Error(described) };
  };
  const inputSchema = schemaFromCheck(check);
  return {
    name,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    description: tool.description ?? '',
    inputSchema,
    execution: { taskSupport },
    definition: { inputSchema: definitionOf(schema) },
    handler: (args, ctx) => runRounds(tool, args, ctx),
  };
}

/**
 * What the tool's definition digest is made of: the JSON Schema of a zod input schema (3 or 4);
 * for another Standard Schema library, which one it is (its schemas are not ours to convert).
 */
function definitionOf(schema: StandardSchema | undefined): unknown {
  if (schema === undefined) return null;
  if (zodMajorOf(schema) !== null) return inputJsonSchema(schema);
  return { vendor: schema['~standard'].vendor };
}

/** Runs the callback; each `input_required` it returns becomes `ctx.ask`, and the next run gets every answer so far. */
async function runRounds(tool: RegisteredV2Tool, args: unknown, ctx: ToolContext): Promise<ToolResult> {
  let responses: Record<string, unknown> = {};
  let state: unknown;
  // Each round runs the callback from the top: a step an earlier round reached is not a new one.
  const steps = roundSteps(ctx.step);
  for (let round = 1; ; round += 1) {
    const result = (await tool.executor(args, v2Context(ctx, responses, state, steps()))) as Record<string, unknown>;
    if (result?.resultType !== 'input_required') return result as ToolResult;
    if (round === MAX_ROUNDS) throw new ProtocolError(JSON_RPC_CODES.internalError, `the tool asked for input ${MAX_ROUNDS} times in one run`);
    const requests = (result.inputRequests ?? {}) as Record<string, InputRequest>;
    // Asked again in the same order on every run: answered questions resolve at once from the store.
    if (Object.keys(requests).length > 0) responses = { ...responses, ...(await ctx.ask(requests)) };
    state = result.requestState;
  }
}

/**
 * What a 2.x tool callback expects as `ctx`, for a call that runs as a task, with tasklatch's
 * durable steps beside it (`ctx.step`).
 */
function v2Context(ctx: ToolContext, inputResponses: Record<string, unknown>, requestState: unknown, step: Step): Record<string, unknown> {
  const ask = (request: InputRequest): Promise<unknown> => {
    if (request.method === 'elicitation/create') return ctx.elicit(request.params as Parameters<ToolContext['elicit']>[0]);
    if (request.method === 'sampling/createMessage') return ctx.sample(request.params ?? {});
    if (request.method === 'roots/list') return ctx.listRoots();
    return Promise.reject(new Error(`${request.method} cannot be sent from a task`));
  };
  return {
    mcpReq: {
      id: ctx.idempotencyKey,
      method: 'tools/call',
      _meta: { progressToken: ctx.idempotencyKey },
      envelope: { [META_KEYS.clientCapabilities]: ctx.clientCapabilities ?? {} },
      inputResponses,
      requestState: () => requestState,
      signal: ctx.signal,
      log: async () => undefined,
      notify: async (notification: { method: string; params?: { progress?: number; total?: number; message?: string } }) => {
        if (notification.method === 'notifications/progress' && typeof notification.params?.progress === 'number')
          await ctx.reportProgress(notification.params.progress, notification.params.total, notification.params.message);
      },
      send: ask,
      elicitInput: (params: Record<string, unknown>) => ask({ method: 'elicitation/create', params }),
      requestSampling: (params: Record<string, unknown>) => ask({ method: 'sampling/createMessage', params }),
    },
    http: { authInfo: { token: '', clientId: authKeyOf(ctx.principal), scopes: [], extra: { principal: ctx.principal, taskId: ctx.taskId } } },
    step,
  };
}
