import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { errorResult } from '../tools/invoke-tool.js';
import { ProtocolError } from '../tools/protocol-error.js';
import { defineTool, type TaskTool, type ToolContext } from '../tools/tool.js';

/** A form with one required boolean. */
function yesNo(name: string): Record<string, unknown> {
  return { type: 'object', properties: { [name]: { type: 'boolean' } }, required: [name] };
}

/** A form with one required string. */
function text(name: string): Record<string, unknown> {
  return { type: 'object', properties: { [name]: { type: 'string' } }, required: [name] };
}

const elicit = (message: string, schema: Record<string, unknown>) => ({ method: 'elicitation/create', params: { message, requestedSchema: schema } });
const CAPITAL = {
  method: 'sampling/createMessage',
  params: { messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }], maxTokens: 100 },
};
const ROOTS = { method: 'roots/list', params: {} };

/** What a sampled message or an elicited form says, as text. */
function said(answer: unknown): string {
  const content = (answer as { content?: Record<string, unknown> } | undefined)?.content ?? {};
  const value = content.text ?? content.name ?? content.color;
  return typeof value === 'string' ? value : '';
}

/** The plain tools of the conformance suite's multi-round-trip (input_required) scenarios. */
function inputRequiredResultTools() {
  return [
    defineTool({
      name: 'test_input_required_result_elicitation',
      description: 'Asks for a name (multi-round trip), then greets it.',
      inputSchema: z.object({}),
      handler: async (_args, ctx) => {
        const answer = await ctx.elicit({ message: 'What is your name?', requestedSchema: text('name') }, { key: 'user_name' });
        return { content: [{ type: 'text', text: `Hello, ${said(answer) || 'stranger'}!` }] };
      },
    }),
    defineTool({
      name: 'test_input_required_result_sampling',
      description: 'Asks the client’s model a question, then answers with its reply.',
      inputSchema: z.object({}),
      handler: async (_args, ctx) => ({
        content: [{ type: 'text', text: `The model says: ${said((await ctx.ask({ capital_question: CAPITAL })).capital_question)}` }],
      }),
    }),
    defineTool({
      name: 'test_input_required_result_list_roots',
      description: 'Asks for the client’s roots, then counts them.',
      inputSchema: z.object({}),
      handler: async (_args, ctx) => {
        const { roots } = (await ctx.ask({ client_roots: ROOTS })).client_roots as { roots: unknown[] };
        return { content: [{ type: 'text', text: `${roots.length} root(s)` }] };
      },
    }),
    defineTool({
      name: 'test_input_required_result_request_state',
      description: 'Asks for a confirmation carried across rounds in the signed request state.',
      inputSchema: z.object({}),
      handler: async (_args, ctx) => {
        await ctx.ask({ confirm: elicit('Confirm?', yesNo('ok')) });
        return { content: [{ type: 'text', text: 'state-ok' }] };
      },
    }),
    defineTool({
      name: 'test_input_required_result_tampered_state',
      description: 'Like request_state; an altered request state is refused.',
      inputSchema: z.object({}),
      handler: async (_args, ctx) => {
        await ctx.ask({ confirm: elicit('Confirm?', yesNo('ok')) });
        return { content: [{ type: 'text', text: 'state-ok' }] };
      },
    }),
    defineTool({
      name: 'test_input_required_result_multiple_inputs',
      description: 'Asks for a name, a sampled greeting and the roots at once.',
      inputSchema: z.object({}),
      handler: async (_args, ctx) => {
        const answers = await ctx.ask({ user_name: elicit('What is your name?', text('name')), greeting: CAPITAL, client_roots: ROOTS });
        return { content: [{ type: 'text', text: `Hello, ${said(answers.user_name)}! (${Object.keys(answers).length} answers)` }] };
      },
    }),
    defineTool({
      name: 'test_input_required_result_multi_round',
      description: 'Asks one question, then another, across rounds.',
      inputSchema: z.object({}),
      handler: async (_args, ctx) => {
        const first = await ctx.ask({ step1: elicit('Your name?', text('name')) });
        const second = await ctx.ask({ step2: elicit('Your favourite colour?', text('color')) });
        return { content: [{ type: 'text', text: `${said(first.step1)} likes ${said(second.step2)}` }] };
      },
    }),
    defineTool({
      name: 'test_input_required_result_capabilities',
      description: 'Asks only what the client declared it can answer.',
      inputSchema: z.object({}),
      handler: async (_args, ctx) => {
        const caps = ctx.clientCapabilities ?? {};
        const request =
          caps.elicitation !== undefined ? elicit('Your name?', text('name')) : caps.sampling !== undefined ? CAPITAL : caps.roots !== undefined ? ROOTS : null;
        if (request === null) return { content: [{ type: 'text', text: 'the client declared nothing to ask' }] };
        await ctx.ask({ answer: request });
        return { content: [{ type: 'text', text: 'answered' }] };
      },
    }),
  ];
}

/** Missing capability as a tool raises it: the client did not declare what this tool needs. */
function needs(ctx: ToolContext, capability: 'sampling' | 'elicitation', tool: string): void {
  if (ctx.clientCapabilities?.[capability] !== undefined) return;
  throw new ProtocolError(JSON_RPC_CODES.missingCapability, `${tool} needs the client's ${capability} capability`, {
    requiredCapabilities: { [capability]: {} },
  });
}

/**
 * The tools the official MCP conformance suite calls on a server under test
 * (`tasklatch serve --tools conformance`), with the behaviour its scenarios expect. `greet`
 * comes first: the header scenario calls the first listed tool with no arguments.
 */
export function conformanceTools(): TaskTool[] {
  const tools = [
    defineTool({
      name: 'greet',
      description: 'Greets someone, at once. Never a task.',
      inputSchema: z.object({ name: z.string().default('World') }),
      handler: async (args) => ({ content: [{ type: 'text', text: `Hello, ${args.name}!` }] }),
    }),
    defineTool({
      name: 'slow_compute',
      description: 'Computes for `seconds` seconds; a task when the client can take one and seconds > 0.',
      inputSchema: z.object({ seconds: z.number().min(0).max(3600).default(1), label: z.string().default('') }),
      execution: { taskSupport: 'optional' },
      runsAsTask: (args) => args.seconds > 0,
      handler: async (args, ctx) => {
        await sleep(args.seconds * 1000, undefined, { signal: ctx.signal });
        return { content: [{ type: 'text', text: `computed ${args.label || 'result'} in ${args.seconds}s` }] };
      },
    }),
    defineTool({
      name: 'failing_job',
      description: 'Runs for about a second and fails at its job: a completed task with an isError result.',
      inputSchema: z.object({}),
      execution: { taskSupport: 'required' },
      handler: async (_args, ctx) => {
        await sleep(1000, undefined, { signal: ctx.signal });
        return errorResult('failing_job failed, as it always does');
      },
    }),
    defineTool({
      name: 'protocol_error_job',
      description: 'Runs briefly and ends its task with a JSON-RPC error: a failed task.',
      inputSchema: z.object({}),
      execution: { taskSupport: 'required' },
      handler: async (_args, ctx) => {
        await sleep(300, undefined, { signal: ctx.signal });
        throw new ProtocolError(JSON_RPC_CODES.internalError, 'protocol_error_job ended with a JSON-RPC error, as it always does');
      },
    }),
    defineTool({
      name: 'test_missing_capability',
      description: `Needs the client’s sampling capability; without it the call is refused with ${JSON_RPC_CODES.missingCapability}.`,
      inputSchema: z.object({}),
      handler: async (_args, ctx) => {
        needs(ctx, 'sampling', 'test_missing_capability');
        return { content: [{ type: 'text', text: 'the client declared sampling' }] };
      },
    }),
    defineTool({
      name: 'test_streaming_elicitation',
      description: 'Needs the client’s elicitation capability; answers on the request’s own response.',
      inputSchema: z.object({}),
      handler: async (_args, ctx) => {
        needs(ctx, 'elicitation', 'test_streaming_elicitation');
        return { content: [{ type: 'text', text: 'the client declared elicitation' }] };
      },
    }),
    defineTool({
      name: 'confirm_delete',
      description: 'Asks the requestor to confirm, then "deletes" the file. Runs as a task.',
      inputSchema: z.object({ filename: z.string().default('file.txt') }),
      execution: { taskSupport: 'required' },
      handler: async (args, ctx) => {
        const answer = await ctx.elicit({ message: `Delete ${args.filename}?`, requestedSchema: yesNo('confirm') }, { key: 'confirm' });
        const confirmed = answer.action === 'accept' && answer.content?.confirm === true;
        return { content: [{ type: 'text', text: confirmed ? `Deleted ${args.filename}` : `Kept ${args.filename}` }] };
      },
    }),
    defineTool({
      name: 'multi_input',
      description: 'Asks two questions at once, then completes. Runs as a task.',
      inputSchema: z.object({}),
      execution: { taskSupport: 'required' },
      handler: async (_args, ctx) => {
        const answers = await ctx.ask({
          name: { method: 'elicitation/create', params: { message: 'Your name?', requestedSchema: text('name') } },
          confirm: { method: 'elicitation/create', params: { message: 'Go ahead?', requestedSchema: yesNo('confirm') } },
        });
        return { content: [{ type: 'text', text: `answered: ${Object.keys(answers).join(', ')}` }] };
      },
    }),
    defineTool({
      name: 'test_tool_with_task',
      description: 'Asks for a name within the call, then becomes a task that greets it.',
      inputSchema: z.object({}),
      execution: { taskSupport: 'required' },
      prepare: async (_args, ctx) => {
        const answer = await ctx.elicit({ message: 'What is your name?', requestedSchema: text('name') }, { key: 'user_name' });
        return { name: typeof answer.content?.name === 'string' ? answer.content.name : 'stranger' };
      },
      handler: async (_args, ctx) => {
        await sleep(200, undefined, { signal: ctx.signal });
        return { content: [{ type: 'text', text: `Hello, ${(ctx.prepared as { name: string }).name}!` }] };
      },
    }),
    ...inputRequiredResultTools(),
    defineTool({
      name: 'test_logging_tool',
      description: 'Would log; sends no log message to a request that named no log level.',
      inputSchema: z.object({}),
      handler: async () => ({ content: [{ type: 'text', text: 'nothing logged: the request named no log level' }] }),
    }),
  ];
  return tools;
}
