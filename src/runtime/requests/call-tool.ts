import { decideCallMode } from '../../core/call-rules.js';
import { isTasklatchError } from '../../core/errors.js';
import { META_KEYS } from '../../core/meta-keys.js';
import { stampConcurrency } from './concurrency-stamp.js';
import type { TaskCapabilities, WireRequest } from '../../core/types.js';
import type { Guard } from '../../service/guard.js';
import { checkCallInput } from '../../service/input-bounds.js';
import { InputNeeded } from '../../tools/asking.js';
import { argumentsMessage, invokeParsed, parseArguments, type ParsedArguments } from '../../tools/invoke-tool.js';
import { authKeyOf } from '../../tools/principal.js';
import type { ToolRegistry } from '../../tools/tool-registry.js';
import type { TaskTool } from '../../tools/tool.js';
import { agreedKey, checkStoredBytes } from './admission-checks.js';
import { trace } from '@opentelemetry/api';
import { requestSpan, traced } from '../../trace/request-span.js';
import { parentContext, stampTraceContext, traceCarrierOf, type StoredTrace, type TraceCarrier } from '../../trace/trace-context.js';
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
 * One `tools/call`, the same steps on both wires, in this order: the input bounds, the tool, one
 * parse of the arguments, whether the call becomes a task (`decideCallMode`); then either the
 * plain run in the call, or the admission (`admitCall`). A call that stores no task leaves its
 * decision with `RequestorSurface.recordCall` (a plain call's `ACCEPT_NORMAL`, a refusal's
 * `BLOCK_*`, counted in the aggregated audit); an admission's audit line is written in the
 * admission's own transaction. A `ProtocolError` a tool throws, and an unavailable store, are
 * thrown on. The call is a `tools/call` span under the caller's trace context (`_meta`, then the
 * HTTP headers; one that is malformed is ignored), and an admission stores that span's context
 * with the task (`stampTraceContext`): the task's first run, in any worker, continues the trace.
 */
export function callTool(host: CallToolHost, call: ToolCall): Promise<CallOutcome> {
  const parent = parentContext(call.params._meta as TraceCarrier | undefined, call.traceHeaders);
  const span = requestSpan('tools/call', parent);
  return traced(span, parent, decideCall, host, call, traceCarrierOf(trace.setSpan(parent, span)));
}

async function decideCall(host: CallToolHost, call: ToolCall, carrier: StoredTrace | null): Promise<CallOutcome> {
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
  if (mode.runs === 'refused') {
    await requestor.recordCall({ auth, tool: tool.name, decision: mode.decision });
    return { kind: 'refused', decision: mode.decision, tool: tool.name, message: refusalMessage(mode.decision, tool.name, context.limits, null) };
  }
  try {
    if (mode.runs === 'task') return await admitCall(host, call, tool, parsed, mode.followUp, carrier);
    const ctx = await call.context();
    await requestor.recordCall({ auth, tool: tool.name, decision: mode.decision });
    return { kind: 'result', decision: mode.decision, result: await invokeParsed(tool, parsed, ctx) };
  } catch (error) {
    if (error instanceof InputNeeded) return { kind: 'input', needed: error };
    throw error;
  }
}

/**
 * The admission of a call that becomes a task, its steps in order: the arguments (checked before
 * anything is stored; the run parses them again), the two idempotency keys agree, the tool's
 * `prepare` (with the call's context: a `prepare` that asks does so in this call), what it
 * returned put in the stored request, that request's size, then the guard's admission. A step
 * that refuses ends the call there, with nothing stored and no audit line.
 */
async function admitCall(
  host: CallToolHost,
  call: ToolCall,
  tool: TaskTool,
  parsed: ParsedArguments,
  followUp: boolean,
  carrier: StoredTrace | null,
): Promise<CallOutcome> {
  const { requestor, context } = host.guard;
  if (!parsed.success) return { kind: 'invalid', message: argumentsMessage(tool, parsed.error) };
  const stored: WireRequest = { method: 'tools/call', params: { ...(call.stored ?? call.params) } };
  let idempotencyKey: string | null;
  try {
    idempotencyKey = agreedKey(stored, call.headerKey);
    // A wire whose context checks nothing (`plainContext`) makes none for an admission that runs no `prepare`.
    const ctx = call.plainContext === true && tool.prepare === undefined ? null : await call.context();
    if (tool.prepare !== undefined) {
      const prepared = await tool.prepare(parsed.data, ctx ?? (await call.context()));
      const meta = (stored.params._meta as Record<string, unknown> | undefined) ?? {};
      stored.params._meta = Object.assign({}, meta, { [META_KEYS.prepared]: prepared });
    }
    stampConcurrency(stored, tool, parsed.data, call.principal);
    stampTraceContext(stored, carrier);
    checkStoredBytes(stored, context.limits.maxRequestBytes);
  } catch (error) {
    if (isTasklatchError(error, 'INVALID_INPUT')) return { kind: 'invalid', message: error.message };
    throw error;
  }
  const outcome = await requestor.admit({ auth: authKeyOf(call.principal), tool: tool.name, request: stored, idempotencyKey });
  if (outcome.record !== null) return { kind: 'task', decision: outcome.decision, record: outcome.record, followUp };
  const message = refusalMessage(outcome.decision, tool.name, context.limits, idempotencyKey);
  return { kind: 'refused', decision: outcome.decision, tool: tool.name, message };
}

/** A tool that may run either way runs as a task unless it says these arguments are quick (or they do not parse). */
function prefersTask(tool: TaskTool, parsed: ParsedArguments): boolean {
  if (tool.runsAsTask === undefined || !parsed.success) return true;
  return tool.runsAsTask(parsed.data);
}
