import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { errorResult } from '../tools/invoke-tool.js';
import { ProtocolError } from '../tools/protocol-error.js';
import { defineTool, type TaskTool, type ToolContext } from '../tools/tool.js';

/** -32021 as a tool raises it: the client did not declare what this tool needs. */
function needs(ctx: ToolContext, capability: 'sampling' | 'elicitation', tool: string): void {
  if (ctx.clientCapabilities?.[capability] !== undefined) return;
  throw new ProtocolError(-32021, `${tool} needs the client's ${capability} capability`, { requiredCapabilities: { [capability]: {} } });
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
        throw new ProtocolError(-32603, 'protocol_error_job ended with a JSON-RPC error, as it always does');
      },
    }),
    defineTool({
      name: 'test_missing_capability',
      description: 'Needs the client’s sampling capability; without it the call is refused with -32021.',
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
      name: 'test_logging_tool',
      description: 'Would log; sends no log message to a request that named no log level.',
      inputSchema: z.object({}),
      handler: async () => ({ content: [{ type: 'text', text: 'nothing logged: the request named no log level' }] }),
    }),
  ];
  return tools;
}
