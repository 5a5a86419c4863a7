import { getParseErrorMessage, normalizeObjectSchema, safeParse, type AnySchema } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import { toJsonSchemaCompat } from '@modelcontextprotocol/sdk/server/zod-json-schema-compat.js';
import { schemaFromCheck, type SchemaCheck } from '../../tools/input-schema.js';
import { jcsSha256 } from '../../core/digest.js';
import { TasklatchError } from '../../core/errors.js';
import { defaultToolVersion } from '../../core/version-rules.js';
import type { TaskSupport } from '../../core/types.js';
import { authKeyOf } from '../../tools/principal.js';
import type { TaskTool, ToolContext, ToolResult } from '../../tools/tool.js';
import type { RegisteredSdkTool } from './sdk-internals.js';

/**
 * A tool registered with `McpServer.registerTool`, as a tasklatch tool: its arguments are
 * checked with its own schema (zod 3, 4 or 4-mini, through the SDK's own parsing), and its
 * handler runs in a worker, in any process, with an SDK-shaped `extra` built from the task's
 * context: `signal` (cancellation, expiry, shutdown), `authInfo` of the task's caller (its
 * `clientId` is the auth key, `extra.principal` the principal; the bearer token is never
 * stored), progress notifications as the task's progress, and `elicitation/create`,
 * `sampling/createMessage` and `roots/list` requests as the task's questions.
 */
export function taskToolFrom(name: string, tool: RegisteredSdkTool, taskSupport: Exclude<TaskSupport, 'forbidden'>): TaskTool {
  if ('createTask' in tool.handler)
    throw new TasklatchError(
      'INVALID_INPUT',
      `cannot attach tasklatch: tool ${name} is registered with experimental.tasks.registerToolTask; register it with registerTool`,
    );
  const schema = tool.inputSchema as AnySchema | undefined;
  const check: SchemaCheck = (value) => {
    if (schema === undefined) return { success: true, data: undefined };
    const parsed: { success: true; data: unknown } | { success: false; error: unknown } = safeParse(schema, value);
    return parsed.success ? { success: true, data: parsed.data } : { success: false, error: new Error(getParseErrorMessage(parsed.error)) };
  };
  const inputSchema = schemaFromCheck(check);
  const handler = tool.handler as unknown as (...args: unknown[]) => Promise<ToolResult>;
  const definition = sdkDefinition(tool);
  return {
    name,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    description: tool.description ?? '',
    inputSchema,
    definition,
    execution: { taskSupport },
    // The registered callback's text, not the adapter's below (the same for every tool): an edit of it is a new version.
    version: defaultToolVersion(handler.toString(), jcsSha256({ name, definition, taskSupport })),
    handler: async (args, ctx) => (schema === undefined ? handler(sdkExtra(ctx)) : handler(args, sdkExtra(ctx))),
  };
}

/**
 * The tool's input and output JSON Schemas, converted as the SDK converts them for `tools/list`
 * (its zod 3 or 4 schemas are not ours to convert): what the tool's definition digest is made of.
 */
function sdkDefinition(tool: RegisteredSdkTool): NonNullable<TaskTool['definition']> {
  const json = (schema: unknown, pipeStrategy: 'input' | 'output') => {
    const object = schema === undefined ? undefined : normalizeObjectSchema(schema as AnySchema);
    return object === undefined ? null : toJsonSchemaCompat(object, { strictUnions: true, pipeStrategy });
  };
  const output = json(tool.outputSchema, 'output');
  return { inputSchema: json(tool.inputSchema, 'input'), ...(output === null ? {} : { outputSchema: output }) };
}

/** What an SDK tool handler expects as `extra`, for a call that runs as a task, with tasklatch's durable steps (`extra.step`). */
function sdkExtra(ctx: ToolContext): Record<string, unknown> {
  return {
    signal: ctx.signal,
    step: ctx.step,
    requestId: ctx.idempotencyKey,
    taskId: ctx.taskId ?? undefined,
    authInfo: { token: '', clientId: authKeyOf(ctx.principal), scopes: [], extra: { principal: ctx.principal } },
    // A progress token is always there: what the handler reports goes to the task's requestor.
    _meta: { progressToken: ctx.idempotencyKey },
    sendNotification: async (notification: { method: string; params?: { progress?: number; total?: number; message?: string } }) => {
      if (notification.method === 'notifications/progress' && typeof notification.params?.progress === 'number')
        await ctx.reportProgress(notification.params.progress, notification.params.total, notification.params.message);
    },
    sendRequest: async (request: { method: string; params?: Record<string, unknown> }) => {
      if (request.method === 'elicitation/create') return ctx.elicit(request.params as Parameters<ToolContext['elicit']>[0]);
      if (request.method === 'sampling/createMessage') return ctx.sample(request.params ?? {});
      if (request.method === 'roots/list') return ctx.listRoots();
      throw new Error(`${request.method} cannot be sent from a task`);
    },
  };
}
