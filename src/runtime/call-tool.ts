import { decideCallMode } from '../core/call-rules.js';
import { idempotencyKeyOf } from '../core/create-rules.js';
import { isTasklatchError } from '../core/errors.js';
import { META_KEYS } from '../core/meta-keys.js';
import type { TaskCapabilities, WireRequest } from '../core/types.js';
import { checkCallInput } from '../service/input-bounds.js';
import type { Guard } from '../service/guard.js';
import { InputNeeded } from '../tools/asking.js';
import { argumentsMessage, invokeParsed, parseArguments, type ParsedArguments } from '../tools/invoke-tool.js';
import { authKeyOf } from '../tools/principal.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { TaskTool, ToolContext } from '../tools/tool.js';
import { refusalMessage, type CallOutcome, type ToolCall } from './call-outcome.js';

export type { CallOutcome, CallRefusal, ToolCall } from './call-outcome.js';

/** What `callTool` needs of the runtime (`TaskRuntime` is one). */
export interface CallToolHost {
  readonly guard: Pick<Guard, 'context' | 'requestor'>;
  readonly tools: ToolRegistry;
  readonly capabilities: TaskCapabilities;
  readonly taskTools: boolean;
}

/**
 * One `tools/call`, the same steps on both wires: the input bounds, the tool, one parse of the
 * arguments, whether the call becomes a task (`decideCallMode`), then either the admission
 * through the service (arguments checked, the tool's `prepare` run, its answer stored with the
 * task) or the plain run in the call. Every decision of the create surface goes through
 * the guard's `requestor.create`, which writes its audit line: a plain call's `ACCEPT_NORMAL`, a refusal's
 * `BLOCK_*` (counted in the aggregated audit), an admission's line in the admission's own
 * transaction. A `ProtocolError` a tool throws, and an unavailable store, are thrown on.
 */
export async function callTool(host: CallToolHost, call: ToolCall): Promise<CallOutcome> {
  const { requestor, context } = host.guard;
  try {
    checkCallInput(call.params, call.headerKey, context.limits.maxArgumentBytes);
  } catch (error) {
    if (isTasklatchError(error, 'INVALID_INPUT')) return { kind: 'invalid', message: error.message };
    throw error;
  }
  const name = call.params.name;
  const tool = typeof name === 'string' ? host.tools.get(name) : undefined;
  if (tool === undefined) return { kind: 'invalid', message: `Unknown tool: ${String(name)}` };
  const parsed = parseArguments(tool, call.params.arguments);
  const mode = decideCallMode({
    asks: call.asks,
    clientTakesTasks: call.clientTakesTasks,
    capabilities: host.capabilities,
    tool: host.tools.descriptor(tool),
    prefersTask: prefersTask(tool, parsed),
    taskTools: host.taskTools,
  });
  const auth = authKeyOf(call.principal);
  const request: WireRequest = { method: 'tools/call', params: call.params };
  const entry = { auth, tool: host.tools.descriptor(tool), request, idempotencyKey: call.headerKey };
  if (mode.runs === 'refused') {
    // Object.assign, not `{ ...entry, entry }`: see `decidedOn` in service/requestor-surface.ts.
    await requestor.create(Object.assign({}, entry, { entry: mode.decision }));
    return { kind: 'refused', decision: mode.decision, tool: tool.name, message: refusalMessage(mode.decision, tool.name, context.limits, null) };
  }
  // A task call's arguments are checked before anything is stored; the run parses them again.
  if (mode.runs === 'task' && !parsed.success) return { kind: 'invalid', message: argumentsMessage(tool, parsed.error) };
  try {
    // A wire whose context checks nothing (`plainContext`) makes none for an admission that runs no `prepare`.
    if (mode.runs === 'task')
      return await admit(host, call, tool, parsed, call.plainContext === true && tool.prepare === undefined ? null : await call.context(), mode.followUp);
    const ctx = await call.context();
    await requestor.create(Object.assign({}, entry, { entry: mode.decision }));
    return { kind: 'result', decision: mode.decision, result: await invokeParsed(tool, parsed, ctx) };
  } catch (error) {
    if (error instanceof InputNeeded) return { kind: 'input', needed: error };
    throw error;
  }
}

/** The admission of a call that becomes a task: what `prepare` returns is part of the stored request. */
async function admit(
  host: CallToolHost,
  call: ToolCall,
  tool: TaskTool,
  parsed: ParsedArguments,
  ctx: ToolContext | null,
  followUp: boolean,
): Promise<CallOutcome> {
  const { requestor, context } = host.guard;
  const stored: WireRequest = { method: 'tools/call', params: { ...(call.stored ?? call.params) } };
  let outcome;
  try {
    outcome = await requestor.create({
      auth: authKeyOf(call.principal),
      tool: host.tools.descriptor(tool),
      request: stored,
      idempotencyKey: call.headerKey,
      entry: 'ADMIT',
      // After the service's own checks of the request (the two keys agree), before the
      // admission: a `prepare` that asks does so in this call, and nothing is stored before.
      beforeAdmit: async () => {
        if (tool.prepare === undefined || !parsed.success) return;
        const prepared = await tool.prepare(parsed.data, ctx ?? (await call.context()));
        const meta = (stored.params._meta as Record<string, unknown> | undefined) ?? {};
        stored.params._meta = Object.assign({}, meta, { [META_KEYS.prepared]: prepared });
      },
    });
  } catch (error) {
    if (isTasklatchError(error, 'INVALID_INPUT')) return { kind: 'invalid', message: error.message };
    throw error;
  }
  switch (outcome.decision) {
    case 'ACCEPT_TASK':
    case 'REPLAY_TASK':
      return { kind: 'task', decision: outcome.decision, record: outcome.record, followUp };
    case 'BLOCK_IDEMPOTENCY_COLLISION':
    case 'BLOCK_TASK_LIMIT':
    case 'BLOCK_STORED_LIMIT': {
      const key = idempotencyKeyOf(stored) ?? call.headerKey;
      return { kind: 'refused', decision: outcome.decision, tool: tool.name, message: refusalMessage(outcome.decision, tool.name, context.limits, key) };
    }
    default:
      // The entry was decided here: the service answers nothing else for an admission.
      throw new Error(`task admission answered ${outcome.decision}`);
  }
}

/** A tool that may run either way runs as a task unless it says these arguments are quick (or they do not parse). */
function prefersTask(tool: TaskTool, parsed: ParsedArguments): boolean {
  if (tool.runsAsTask === undefined || !parsed.success) return true;
  return tool.runsAsTask(parsed.data);
}
